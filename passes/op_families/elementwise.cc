// Unary ops (ReLU, GeLU, Tanh, ...) and Cast: one factor per dim, in and out. (Cast ignores a
// configured strategy and follows its neighbours: ir/op_defs.cc's ignoresConfiguredStrategy.)
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class Elementwise : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override { return sameShapeRule(in.operands[0].shape); }
};

}  // namespace

const OpFamilyRules& elementwise() {
  static const Elementwise rules;
  return rules;
}

}  // namespace irc::families
