// Softmax and LogSoftmax: every dim passes through but the softmax axis, which the op needs
// whole.
#include "ir/shape_inference.h"
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class Softmax : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    int64_t rank = static_cast<int64_t>(in.operands[0].shape.size());
    std::vector<bool> replicated(rank, false);
    replicated[*normalizeAxis(std::get<int64_t>(in.attrs.at("axis")), rank)] = true;
    return sameShapeRule(in.operands[0].shape, replicated);
  }
  std::string_view replicatedWhy() const override { return "its softmax axis"; }
};

}  // namespace

const OpFamilyRules& softmax() {
  static const Softmax rules;
  return rules;
}

}  // namespace irc::families
