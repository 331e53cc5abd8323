// CumSum (ONNX's and MindSpore's): the running sum along an axis, inclusive or exclusive,
// forward or reverse. The axis is needed whole; every other dim passes through.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

class Cumulative : public OpFamilyRules {
 public:
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"CumSum",
                    OpFamily::Cumulative,
                    {tensor("x"), constant("axis", OperandKind::Int)},
                    {attr("exclusive", AttrKind::Bool, false), attr("reverse", AttrKind::Bool, false)}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    const TensorType& x = *in[0].tensor;
    int64_t axis = std::get<int64_t>(*in[1].constant);
    if (!normalizeAxis(axis, x.shape.size()))
      return fail(fmt::format("axis {} is out of range for rank {}", axis, x.shape.size()), 1);
    return std::vector<TensorType>{x};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>&) const override {
    const int64_t axis = *normalizeAxis(std::get<int64_t>(constantOf(op, 1)), in[0]->shape.size());
    const bool exclusive = std::get<bool>(op.attrs.at("exclusive")), reverse = std::get<bool>(op.attrs.at("reverse"));
    return {alongAxis(*in[0], axis, [&](std::vector<double>& line) {
      if (reverse) std::reverse(line.begin(), line.end());
      double sum = 0;
      for (double& v : line) {
        double x = v;
        v = exclusive ? sum : sum + x;
        sum += x;
      }
      if (reverse) std::reverse(line.begin(), line.end());
    })};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.constants = {Attribute(int64_t{1})};
    s.note = "axis 1";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& shape = in.operands[0].shape;
    std::vector<bool> replicated(shape.size(), false);
    replicated[*normalizeAxis(std::get<int64_t>(in.constants.at(0)), shape.size())] = true;
    return sameShapeRule(shape, replicated);
  }
  std::string_view replicatedWhy() const override { return "the axis it sums along"; }
};

}  // namespace

const OpFamilyRules& cumulative() {
  static const Cumulative rules;
  return rules;
}

}  // namespace irc::families
