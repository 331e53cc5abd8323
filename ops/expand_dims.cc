// ExpandDims: the operand's factors, with a factorless size-1 dim inserted at the axis.
#include "ops/shape_inference.h"
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferExpandDims(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = std::get<int64_t>(*in[1].constant);
  auto n = normalizeAxis(axis, rank + 1);
  if (!n)
    return fail(fmt::format("axis {} is out of range for ExpandDims of rank {} (valid: {} .. {})", axis, rank, -rank - 1, rank),
                1);
  Shape out = x.shape;
  out.insert(out.begin() + *n, 1);
  return std::vector<TensorType>{{x.dtype, out}};
}

class ExpandDims : public OpFamilyRules {
 public:
  bool resultIsView(const Graph&, const Op&) const override { return true; }
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  bool elementwiseForPropagation() const override { return true; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"ExpandDims", OpFamily::ExpandDims, {tensor("x"), constant("axis", OperandKind::Int)}, {}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferExpandDims(in);
  }
  std::vector<TensorValue> evaluate(const Op&, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {reshaped(*in[0], results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.constants = {Attribute(int64_t{0})};
    s.note = "axis 0";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    std::vector<int> f = b.factorsFor(in.operands[0].shape);
    int64_t axis = *normalizeAxis(std::get<int64_t>(in.constants.at(0)), in.operands[0].shape.size() + 1);
    DimFactors outDims = single(f);
    outDims.insert(outDims.begin() + axis, std::vector<int>{});
    b.rule.operands = {single(f)};
    b.rule.results = {outDims};
    return b.done();
  }
};

}  // namespace

const OpFamilyRules& expandDims() {
  static const ExpandDims rules;
  return rules;
}

}  // namespace irc::families
