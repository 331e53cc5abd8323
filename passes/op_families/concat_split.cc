// Concat and Split: every operand and result has the same factors; the concat/split axis is one
// replicated factor for all of them (its size differs per tensor, but it is never split), so
// the tensor maps are MindSpore's identity maps.
#include "ir/shape_inference.h"
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class ConcatSplit : public OpFamilyRules {
 public:
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

}  // namespace

const OpFamilyRules& concatSplit() {
  static const ConcatSplit rules;
  return rules;
}

}  // namespace irc::families
