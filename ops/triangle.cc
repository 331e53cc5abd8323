// Triu and Tril: which elements survive depends on their row and column in the last two dims, so
// those dims are needed whole; the leading (batch) dims pass through.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

class Triangle : public OpFamilyRules {
 public:
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  // (irc) ONNX's Trilu (causal masks): the elements on and above (Triu) or on and below (Tril)
  // the `diagonal`-th diagonal of the last two dims are kept, the others are 0.
  void define(std::vector<OpDef>& defs) const override {
    for (bool upper : {true, false}) {
      defs.push_back({upper ? "Triu" : "Tril", OpFamily::Triangle, {tensor("x")}, {attr("diagonal", AttrKind::Int, int64_t{0})}});
      defs.back().upper = upper;
    }
  }
  InferResult inferTypes(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap&) const override {
    if (in[0].tensor->shape.size() < 2)
      return fail(fmt::format("x has rank {}; {} takes a tensor of rank >= 2", in[0].tensor->shape.size(), def.type), 0);
    return std::vector<TensorType>{*in[0].tensor};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>&) const override {
    // Keep x[..., i, j] where j - i >= diagonal (Triu) or <= diagonal (Tril).
    TensorValue out = *in[0];
    const bool upper = defOf(op).upper;
    const int64_t diagonal = std::get<int64_t>(op.attrs.at("diagonal")), rank = static_cast<int64_t>(out.shape.size());
    int64_t k = 0;
    forEach(out.shape, [&](const Index& idx) {
      int64_t offset = idx[rank - 1] - idx[rank - 2];
      if (upper ? offset < diagonal : offset > diagonal) out.data[k] = 0;
      ++k;
    });
    return {out};
  }
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
