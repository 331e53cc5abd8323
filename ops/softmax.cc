// Softmax and LogSoftmax: every dim passes through but the softmax axis, which the op needs
// whole.
#include "ops/shape_inference.h"
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

TensorValue softmax(const Op& op, const TensorValue& x) {
  int64_t axis = *normalizeAxis(intAttr(op, "axis"), x.shape.size());
  bool log = defOf(op).logarithmic;
  return alongAxis(x, axis, [&](std::vector<double>& line) {
    double mx = *std::max_element(line.begin(), line.end()), sum = 0;
    for (double v : line) sum += std::exp(v - mx);
    for (double& v : line) v = log ? v - mx - std::log(sum) : std::exp(v - mx) / sum;
  });
}

class Softmax : public OpFamilyRules {
 public:
  AttentionPart attentionPart(const Op&) const override { return AttentionPart::Softmax; }
  // Its gradient is a function of its output.
  SavedForBackward savedForBackward(const Op&) const override { return {{}, {0}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    for (const char* t : {"Softmax", "LogSoftmax"})
      defs.push_back({t, OpFamily::Softmax, {tensor("x")}, {attr("axis", AttrKind::Int, int64_t{-1})}});
    defs.back().logarithmic = true;  // LogSoftmax
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    const TensorType& x = *in[0].tensor;
    int64_t axis = intAttr(attrs, "axis");
    if (!normalizeAxis(axis, x.shape.size()))
      return fail(fmt::format("axis {} is out of range for rank {}", axis, x.shape.size()), -1, "axis");
    return std::vector<TensorType>{x};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>&) const override {
    return {softmax(op, *in[0])};
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    int64_t rank = static_cast<int64_t>(in.operands[0].shape.size());
    std::vector<bool> replicated(rank, false);
    replicated[*normalizeAxis(std::get<int64_t>(in.attrs.at("axis")), rank)] = true;
    return sameShapeRule(in.operands[0].shape, replicated);
  }
  std::string_view replicatedWhy() const override { return "its softmax axis"; }
  bool passesBatchDim0(const Graph& g, const Op& op) const override {
    auto axis = normalizeAxis(std::get<int64_t>(op.attrs.at("axis")), g.value(op.results[0]).type.shape.size());
    return axis && *axis != 0;
  }
  void prependBatchDims(Op& op, int64_t extra) const override {
    int64_t& axis = std::get<int64_t>(op.attrs.at("axis"));
    if (axis > 0) axis += extra;  // a negative axis counts from the unchanged end
  }
};

}  // namespace

const OpFamilyRules& softmax() {
  static const Softmax rules;
  return rules;
}

}  // namespace irc::families
