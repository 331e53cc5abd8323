// ExpandDims: the operand's factors, with a factorless size-1 dim inserted at the axis.
#include "ir/shape_inference.h"
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class ExpandDims : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    std::vector<int> f = b.factorsFor(in.operands[0].shape);
    int64_t axis = *normalizeAxis(std::get<int64_t>(in.constants.at(0)), in.operands[0].shape.size() + 1);
    DimFactors outDims = single(f);
    outDims.insert(outDims.begin() + axis, std::vector<int>{});
    b.rule.operands = {single(f)};
    b.rule.results = {outDims};
    return b.done();
  }
};

}  // namespace

const OpFamilyRules& expandDims() {
  static const ExpandDims rules;
  return rules;
}

}  // namespace irc::families
