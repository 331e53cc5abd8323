// LayerNorm: the dims from begin_norm_axis on are normalized together and needed whole; gamma
// and beta cover them; mean and variance keep the leading dims.
#include "ir/shape_inference.h"
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

class LayerNorm : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    const Shape& shape = in.operands[0].shape;
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t axis = *normalizeAxis(std::get<int64_t>(in.attrs.at("begin_norm_axis")), rank);
    std::vector<int> f;
    for (int64_t d = 0; d < rank; ++d) f.push_back(b.factor(shape[d], d >= axis ? FactorKind::Replicated : FactorKind::PassThrough));
    std::vector<int> trailing(f.begin() + axis, f.end()), leading(f.begin(), f.begin() + axis);
    b.rule.operands = {single(f), single(trailing), single(trailing)};
    DimFactors stat = single(leading);
    stat.resize(rank);
    b.rule.results = {single(f), stat, stat};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a normalized dim"; }
};

}  // namespace

const OpFamilyRules& layerNorm() {
  static const LayerNorm rules;
  return rules;
}

}  // namespace irc::families
