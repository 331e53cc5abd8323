// An op irc has no semantics for (an ONNX node kept with --opaque-unsupported): every dim of
// every operand and result is a replicated factor, so its operands arrive whole on every rank
// and every rank computes the whole result.
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class Opaque : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    auto whole = [&](const Shape& shape) {
      DimFactors dims;
      for (int64_t d : shape) dims.push_back({b.factor(d, FactorKind::Replicated)});
      return dims;
    };
    for (const TensorType& t : in.operands) b.rule.operands.push_back(whole(t.shape));
    for (const TensorType& t : in.results) b.rule.results.push_back(whole(t.shape));
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a dim of an opaque op (irc does not know its semantics)"; }
};

}  // namespace

const OpFamilyRules& opaque() {
  static const Opaque rules;
  return rules;
}

}  // namespace irc::families
