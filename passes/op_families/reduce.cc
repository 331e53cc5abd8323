// ReduceSum, ReduceMean, ReduceMax, ReduceMin: a reduced dim is a reduction factor (splitting it
// leaves the result partial, combined by the op's own reduction); ReduceMean divides the summed
// partial means by the group size.
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class Reduce : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    const Shape& shape = in.operands[0].shape;
    int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<bool> reduced = namedDims(in.constants.at(0), rank);
    bool keep = std::get<bool>(in.attrs.at("keep_dims"));
    std::vector<int> f;
    DimFactors outDims;
    for (int64_t d = 0; d < rank; ++d) {
      f.push_back(b.factor(shape[d], reduced[d] ? FactorKind::Reduction : FactorKind::PassThrough));
      if (!reduced[d]) outDims.push_back({f.back()});
      else if (keep) outDims.push_back({});
    }
    if (in.def.reduction == Reduction::Max) b.rule.reduceOp = ReduceOp::Max;
    if (in.def.reduction == Reduction::Min) b.rule.reduceOp = ReduceOp::Min;
    b.rule.operands = {single(f)};
    b.rule.results = {outDims};
    return b.done();
  }
  std::string_view partialWhy() const override { return "splits a reduced dim"; }
  bool averagesPartials(const OpDef& def) const override { return def.reduction == Reduction::Mean; }
};

}  // namespace

const OpFamilyRules& reduce() {
  static const Reduce rules;
  return rules;
}

}  // namespace irc::families
