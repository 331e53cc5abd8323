// TopK (MindSpore's TopK, ONNX's TopK): the k largest (or smallest) elements along an axis and
// their indices, sorted, ties to the lower index. MindSpore takes the last axis and the largest;
// `axis` and `largest` are irc's, for ONNX. The axis is needed whole (a rank's k best are not
// the k best); every other dim passes through.
#include <algorithm>
#include <numeric>

#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

class TopK : public OpFamilyRules {
 public:
  // Its backward scatters the gradient to the indices it picked.
  SavedForBackward savedForBackward(const Op&) const override { return {{}, {1}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"TopK",
                    OpFamily::TopK,
                    {tensor("x"), constant("k", OperandKind::Int)},
                    {attr("sorted", AttrKind::Bool, true), attr("axis", AttrKind::Int, int64_t{-1}),
                     attr("largest", AttrKind::Bool, true)}});
    defs.back().results = 2;  // values, indices
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    const TensorType& x = *in[0].tensor;
    if (x.shape.empty()) return fail("TopK's x must have rank >= 1; got a scalar", 0);
    auto axis = normalizeAxis(intAttr(attrs, "axis"), x.shape.size());
    if (!axis)
      return fail(fmt::format("axis {} is out of range for rank {}", intAttr(attrs, "axis"), x.shape.size()), -1, "axis");
    int64_t k = std::get<int64_t>(*in[1].constant);
    if (k < 1 || k > x.shape[*axis])
      return fail(fmt::format("k {} must be in 1 .. {} (dim {} of x)", k, x.shape[*axis], *axis), 1);
    Shape out = x.shape;
    out[*axis] = k;
    return std::vector<TensorType>{{x.dtype, out}, {DType::Int32, out}};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    const TensorValue& x = *in[0];
    const int64_t axis = *normalizeAxis(intAttr(op, "axis"), x.shape.size());
    const int64_t k = std::get<int64_t>(constantOf(op, 1));
    const bool largest = std::get<bool>(op.attrs.at("largest"));
    TensorValue values = TensorValue::zeros(results[0].shape), indices = TensorValue::zeros(results[1].shape);
    Shape lines = x.shape;
    lines[axis] = 1;
    auto xs = stridesOf(x.shape), os = stridesOf(results[0].shape);
    std::vector<int64_t> order(static_cast<size_t>(x.shape[axis]));
    forEach(lines, [&](const Index& idx) {
      int64_t base = offsetOf(idx, xs), outBase = offsetOf(idx, os);
      auto at = [&](int64_t i) { return x.data[base + i * xs[axis]]; };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return largest ? at(a) > at(b) : at(a) < at(b); });
      for (int64_t j = 0; j < k; ++j) {
        values.data[outBase + j * os[axis]] = at(order[j]);
        indices.data[outBase + j * os[axis]] = static_cast<double>(order[j]);
      }
    });
    return {values, indices};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.constants = {Attribute(int64_t{2})};
    s.note = "k 2 along the last axis";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& x = in.operands[0].shape;
    const int64_t axis = *normalizeAxis(std::get<int64_t>(in.attrs.at("axis")), x.size());
    RuleBuilder b;
    DimFactors xDims, outDims;
    for (size_t d = 0; d < x.size(); ++d) {
      if (static_cast<int64_t>(d) == axis) {
        xDims.push_back({b.factor(x[d], FactorKind::Replicated)});
        outDims.push_back({b.factor(in.results[0].shape[d], FactorKind::Replicated)});
      } else {
        int f = b.factor(x[d]);
        xDims.push_back({f});
        outDims.push_back({f});
      }
    }
    b.rule.operands = {xDims};
    b.rule.results = {outDims, outDims};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "the axis it picks the k best along"; }
};

}  // namespace

const OpFamilyRules& topK() {
  static const TopK rules;
  return rules;
}

}  // namespace irc::families
