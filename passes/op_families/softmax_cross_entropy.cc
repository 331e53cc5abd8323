// SoftmaxCrossEntropyWithLogits: the batch dim passes through; the class dim is needed whole.
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class SoftmaxCrossEntropy : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    int n = b.factor(in.operands[0].shape[0]);
    int c = b.factor(in.operands[0].shape[1], FactorKind::Replicated);
    b.rule.operands = {DimFactors{{n}, {c}}, DimFactors{{n}, {c}}};
    b.rule.results = {DimFactors{{n}}, DimFactors{{n}, {c}}};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "the class dim"; }
};

}  // namespace

const OpFamilyRules& softmaxCrossEntropy() {
  static const SoftmaxCrossEntropy rules;
  return rules;
}

}  // namespace irc::families
