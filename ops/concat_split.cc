// Concat and Split: every operand and result has the same factors; the concat/split axis is one
// replicated factor for all of them (its size differs per tensor, but it is never split), so
// the tensor maps are MindSpore's identity maps.
#include "ops/shape_inference.h"
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferConcat(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  if (in.empty()) return fail("Concat needs at least one input");
  const TensorType& first = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(first.shape.size());
  auto axis = normalizeAxis(intAttr(attrs, "axis"), rank);
  if (!axis) return fail(fmt::format("axis {} is out of range for rank {}", intAttr(attrs, "axis"), rank), -1, "axis");
  Shape out = first.shape;
  for (size_t i = 1; i < in.size(); ++i) {
    const TensorType& t = *in[i].tensor;
    if (t.dtype != first.dtype)
      return fail(fmt::format("Concat inputs have different dtypes: {} and {}", modelName(first.dtype), modelName(t.dtype)),
                  static_cast<int>(i));
    bool ok = static_cast<int64_t>(t.shape.size()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d)
      if (d != *axis && t.shape[d] != first.shape[d]) ok = false;
    if (!ok)
      return fail(fmt::format("Concat input {} has shape {}; it must equal {} except on axis {}", i, formatShape(t.shape),
                              formatShape(first.shape), *axis),
                  static_cast<int>(i));
    out[*axis] += t.shape[*axis];
  }
  return std::vector<TensorType>{{first.dtype, out}};
}

InferResult inferSplit(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  auto axis = normalizeAxis(intAttr(attrs, "axis"), rank);
  if (!axis) return fail(fmt::format("axis {} is out of range for rank {}", intAttr(attrs, "axis"), rank), -1, "axis");
  int64_t n = intAttr(attrs, "output_num");
  if (n < 1 || n > kMaxOpResults)
    return fail(fmt::format("output_num must be in 1 .. {} (docs/limits.md); got {}", kMaxOpResults, n), -1, "output_num");
  if (x.shape[*axis] % n != 0)
    return fail(
        fmt::format("output_num {} does not divide dim {} of shape {} (size {})", n, *axis, formatShape(x.shape), x.shape[*axis]),
        -1, "output_num");
  Shape part = x.shape;
  part[*axis] /= n;
  return std::vector<TensorType>(n, TensorType{x.dtype, part});
}

std::vector<TensorValue> split(const Op& op, const TensorValue& x, const std::vector<TensorType>& results) {
  int64_t axis = *normalizeAxis(intAttr(op, "axis"), x.shape.size());
  std::vector<TensorValue> outs;
  int64_t part = results[0].shape[axis];
  for (size_t r = 0; r < results.size(); ++r) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (size_t d = 0; d < x.shape.size(); ++d)
      ranges.emplace_back(static_cast<int64_t>(d) == axis ? r * part : 0,
                          static_cast<int64_t>(d) == axis ? (r + 1) * part : x.shape[d]);
    outs.push_back(sliceOf(x, ranges));
  }
  return outs;
}

class ConcatSplit : public OpFamilyRules {
 public:
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    const TensorType& ref = in.def.family == OpFamily::Concat ? in.results[0] : in.operands[0];
    int64_t rank = static_cast<int64_t>(ref.shape.size());
    int64_t axis = *normalizeAxis(std::get<int64_t>(in.attrs.at("axis")), rank);
    std::vector<int> f = b.factorsFor(ref.shape);
    b.rule.factorKinds[f[axis]] = FactorKind::Replicated;
    for (size_t i = 0; i < in.operands.size(); ++i) b.rule.operands.push_back(single(f));
    for (size_t i = 0; i < in.results.size(); ++i) b.rule.results.push_back(single(f));
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "its concat/split axis"; }
};

class Concat : public ConcatSplit {
 public:
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Concat",
                    OpFamily::Concat,
                    {{"values", OperandKind::TensorList, std::nullopt}},
                    {attr("axis", AttrKind::Int, int64_t{0})}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferConcat(in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {concatAlong(in, *normalizeAxis(intAttr(op, "axis"), results[0].shape.size()))};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands.push_back(s.operands[0]);
    s.note = "two inputs, axis 0";
  }
};

class Split : public ConcatSplit {
 public:
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Split",
                    OpFamily::Split,
                    {tensor("x")},
                    {attr("axis", AttrKind::Int, int64_t{0}), attr("output_num", AttrKind::Int, std::nullopt)}});
    defs.back().resultCountAttr = "output_num";
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferSplit(in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return split(op, *in[0], results);
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.attrs["output_num"] = int64_t{2};
    s.note = "output_num 2, axis 0";
  }
};

}  // namespace

const OpFamilyRules& concat() {
  static const Concat rules;
  return rules;
}

const OpFamilyRules& split() {
  static const Split rules;
  return rules;
}

}  // namespace irc::families
