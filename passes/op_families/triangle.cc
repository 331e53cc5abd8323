// Triu and Tril: which elements survive depends on their row and column in the last two dims, so
// those dims are needed whole; the leading (batch) dims pass through.
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class Triangle : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& shape = in.operands[0].shape;
    std::vector<bool> replicated(shape.size(), false);
    for (size_t d = shape.size() >= 2 ? shape.size() - 2 : 0; d < shape.size(); ++d) replicated[d] = true;
    return sameShapeRule(shape, replicated);
  }
  std::string_view replicatedWhy() const override { return "one of the two dims its triangle is taken over"; }
};

}  // namespace

const OpFamilyRules& triangle() {
  static const Triangle rules;
  return rules;
}

}  // namespace irc::families
