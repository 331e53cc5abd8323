// Slice (x[begin : begin + size] per dim) and BroadcastTo (numpy broadcasting to a shape): the
// ops ONNX's Slice and Expand of computed tensors become.
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

// A dim the op takes whole passes through (its slices are the output's slices); a dim it cuts
// is replicated on both sides: every rank cuts the same window from the whole dim.
class Slice : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& x = in.operands[0].shape;
    const Shape& out = in.results[0].shape;
    const auto& begin = std::get<IntTuple>(in.constants[0]);
    RuleBuilder b;
    DimFactors operand, result;
    for (size_t d = 0; d < x.size(); ++d) {
      if (begin[d] == 0 && out[d] == x[d]) {
        int f = b.factor(x[d]);
        operand.push_back({f});
        result.push_back({f});
      } else {
        operand.push_back({b.factor(x[d], FactorKind::Replicated)});
        result.push_back({b.factor(out[d], FactorKind::Replicated)});
      }
    }
    b.rule.operands = {operand};
    b.rule.results = {result};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a dim it slices a window from"; }
  // On a rank, a dim taken whole is the rank's slice of it: the size is the local output's.
  void localize(Op& op) const override {
    op.operands[2].constant = Attribute(IntTuple(op.parallel->outputLayouts[0].sliceShape()));
  }
};

// An output dim matching x's dim passes through; a dim x broadcasts (size 1) or lacks is the
// output's own factor: a rank makes its slice of the broadcast.
class BroadcastTo : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& x = in.operands[0].shape;
    const Shape& out = in.results[0].shape;
    size_t offset = out.size() - x.size();
    RuleBuilder b;
    DimFactors operand(x.size()), result;
    for (size_t d = 0; d < out.size(); ++d) {
      int f = b.factor(out[d]);
      result.push_back({f});
      if (d >= offset && x[d - offset] == out[d]) operand[d - offset] = {f};
    }
    b.rule.operands = {operand};
    b.rule.results = {result};
    return b.done();
  }
  void localize(Op& op) const override {
    op.operands[1].constant = Attribute(IntTuple(op.parallel->outputLayouts[0].sliceShape()));
  }
};

}  // namespace

const OpFamilyRules& slice() {
  static const Slice rules;
  return rules;
}

const OpFamilyRules& broadcastTo() {
  static const BroadcastTo rules;
  return rules;
}

}  // namespace irc::families
