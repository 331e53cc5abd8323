// Binary elementwise ops with numpy broadcasting (Add, Sub, Mul, RealDiv, Maximum, Minimum,
// Equal), and BiasAdd (a bias along dim 1).
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

// One factor per output dim; an operand dim of size 1 under a larger output dim has none (it
// broadcasts, so it must not be split).
class Broadcast : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const TensorType& result = in.results[0];
    RuleBuilder b;
    std::vector<int> f = b.factorsFor(result.shape);
    for (const TensorType& t : in.operands) {
      DimFactors dims;
      size_t offset = result.shape.size() - t.shape.size();
      for (size_t d = 0; d < t.shape.size(); ++d) {
        bool broadcasts = t.shape[d] == 1 && result.shape[offset + d] != 1;
        dims.push_back(broadcasts ? std::vector<int>{} : std::vector<int>{f[offset + d]});
      }
      b.rule.operands.push_back(dims);
    }
    b.rule.results.push_back(single(f));
    return b.done();
  }
};

class BiasAdd : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    std::vector<int> f = b.factorsFor(in.operands[0].shape);
    b.rule.operands = {single(f), DimFactors{{f[1]}}};
    b.rule.results = {single(f)};
    return b.done();
  }
};

}  // namespace

const OpFamilyRules& broadcast() {
  static const Broadcast rules;
  return rules;
}

const OpFamilyRules& biasAdd() {
  static const BiasAdd rules;
  return rules;
}

}  // namespace irc::families
