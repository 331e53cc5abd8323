// Transpose: the result's dims are the operand's factors permuted.
#include "ir/shape_inference.h"
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class Transpose : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    std::vector<int> f = b.factorsFor(in.operands[0].shape);
    IntTuple perm = *normalizePerm(std::get<IntTuple>(in.constants.at(0)), in.operands[0].shape.size());
    DimFactors outDims;
    for (int64_t p : perm) outDims.push_back({f[p]});
    b.rule.operands = {single(f)};
    b.rule.results = {outDims};
    return b.done();
  }
};

}  // namespace

const OpFamilyRules& transpose() {
  static const Transpose rules;
  return rules;
}

}  // namespace irc::families
