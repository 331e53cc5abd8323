// Argmax and Argmin (ONNX's ArgMax/ArgMin; MindSpore's Argmax, Argmin): the index of the largest
// or smallest element along an axis, as int64. Partial indices cannot be combined without their
// values, so the axis is needed whole; every other dim passes through.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

class ArgReduce : public OpFamilyRules {
 public:
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  void define(std::vector<OpDef>& defs) const override {
    for (auto [type, reduction] : {std::pair{"Argmax", Reduction::Max}, std::pair{"Argmin", Reduction::Min}}) {
      defs.push_back({type,
                      OpFamily::ArgReduce,
                      {tensor("x")},
                      {attr("axis", AttrKind::Int, int64_t{0}), attr("keep_dims", AttrKind::Bool, false),
                       attr("select_last_index", AttrKind::Bool, false)}});
      defs.back().reduction = reduction;
    }
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    const TensorType& x = *in[0].tensor;
    auto axis = normalizeAxis(intAttr(attrs, "axis"), x.shape.size());
    if (!axis)
      return fail(fmt::format("axis {} is out of range for rank {}", intAttr(attrs, "axis"), x.shape.size()), -1, "axis");
    if (x.shape[*axis] == 0) return fail(fmt::format("dim {} is empty: there is no index to take", *axis), 0);
    Shape out = x.shape;
    if (boolAttr(attrs, "keep_dims")) out[*axis] = 1;
    else out.erase(out.begin() + *axis);
    return std::vector<TensorType>{{DType::Int64, out}};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    const TensorValue& x = *in[0];
    const int64_t axis = *normalizeAxis(intAttr(op, "axis"), x.shape.size());
    const bool max = defOf(op).reduction == Reduction::Max, last = std::get<bool>(op.attrs.at("select_last_index"));
    TensorValue indices = alongAxis(x, axis, [&](std::vector<double>& line) {
      size_t best = 0;
      for (size_t i = 1; i < line.size(); ++i) {
        bool better = max ? line[i] > line[best] : line[i] < line[best];
        if (better || (last && line[i] == line[best])) best = i;
      }
      std::fill(line.begin(), line.end(), static_cast<double>(best));
    });
    // Every element of a line now holds its index: keep the first of each line.
    TensorValue out = TensorValue::zeros(results[0].shape);
    Shape kept = x.shape;
    kept[axis] = 1;
    auto si = stridesOf(x.shape);
    int64_t i = 0;
    forEach(kept, [&](const Index& idx) { out.data[i++] = indices.data[offsetOf(idx, si)]; });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.attrs["axis"] = int64_t{1};
    s.note = "axis 1";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& x = in.operands[0].shape;
    const int64_t axis = *normalizeAxis(std::get<int64_t>(in.attrs.at("axis")), x.size());
    const bool keep = std::get<bool>(in.attrs.at("keep_dims"));
    RuleBuilder b;
    DimFactors xDims, outDims;
    for (size_t d = 0; d < x.size(); ++d) {
      if (static_cast<int64_t>(d) == axis) {
        xDims.push_back({b.factor(x[d], FactorKind::Replicated)});
        if (keep) outDims.push_back({});
      } else {
        int f = b.factor(x[d]);
        xDims.push_back({f});
        outDims.push_back({f});
      }
    }
    b.rule.operands = {xDims};
    b.rule.results = {outDims};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "the axis it takes the index along"; }
};

}  // namespace

const OpFamilyRules& argReduce() {
  static const ArgReduce rules;
  return rules;
}

}  // namespace irc::families
