// Pad (MindSpore's Pad; ONNX's Pad in constant mode): x with `paddings` elements of `value`
// before and after each dim. A padded dim is needed whole (only the edge ranks would pad);
// every other dim passes through.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

// `paddings` as (before, after) per dim: [b0, a0, b1, a1, ...] (MindSpore writes ((b0, a0), ...)).
std::optional<InferError> checkPaddings(const IntTuple& p, size_t rank) {
  if (p.size() != 2 * rank)
    return fail(fmt::format("paddings {} must give a (before, after) pair for each of the {} dims", formatIntTuple(p), rank), -1,
                "paddings");
  for (int64_t v : p)
    if (v < 0) return fail(fmt::format("paddings {} has {}; irc pads, it does not crop (entries >= 0)", formatIntTuple(p), v), -1, "paddings");
  return std::nullopt;
}

class Pad : public OpFamilyRules {
 public:
  // Its backward cuts the gradient back: shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Pad", OpFamily::Pad, {tensor("x")},
                    {attr("paddings", AttrKind::IntOrTuple, std::nullopt), attr("value", AttrKind::Float, 0.0)}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    const TensorType& x = *in[0].tensor;
    IntTuple p = asTuple(attrs.at("paddings"));
    if (auto e = checkPaddings(p, x.shape.size())) return *e;
    Shape out = x.shape;
    for (size_t d = 0; d < out.size(); ++d) out[d] += p[2 * d] + p[2 * d + 1];
    return std::vector<TensorType>{{x.dtype, out}};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    const TensorValue& x = *in[0];
    IntTuple p = asTuple(op.attrs.at("paddings"));
    TensorValue out = TensorValue::zeros(results[0].shape);
    std::fill(out.data.begin(), out.data.end(), std::get<double>(op.attrs.at("value")));
    auto so = stridesOf(out.shape);
    int64_t i = 0;
    forEach(x.shape, [&](const Index& idx) {
      Index at = idx;
      for (size_t d = 0; d < at.size(); ++d) at[d] += p[2 * d];
      out.data[offsetOf(at, so)] = x.data[i++];
    });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.attrs["paddings"] = IntTuple{0, 0, 1, 2};
    s.note = "1 before and 2 after dim 1";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& x = in.operands[0].shape;
    IntTuple p = asTuple(in.attrs.at("paddings"));
    RuleBuilder b;
    DimFactors xDims, outDims;
    for (size_t d = 0; d < x.size(); ++d) {
      if (p[2 * d] == 0 && p[2 * d + 1] == 0) {
        int f = b.factor(x[d]);
        xDims.push_back({f});
        outDims.push_back({f});
      } else {
        xDims.push_back({b.factor(x[d], FactorKind::Replicated)});
        outDims.push_back({b.factor(in.results[0].shape[d], FactorKind::Replicated)});
      }
    }
    b.rule.operands = {xDims};
    b.rule.results = {outDims};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a padded dim"; }
};

}  // namespace

const OpFamilyRules& pad() {
  static const Pad rules;
  return rules;
}

}  // namespace irc::families
