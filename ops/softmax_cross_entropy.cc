// SoftmaxCrossEntropyWithLogits: the batch dim passes through; the class dim is needed whole.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferSoftmaxCrossEntropy(const std::vector<InferOperand>& in) {
  const TensorType& logits = *in[0].tensor;
  const TensorType& labels = *in[1].tensor;
  if (logits.shape.size() != 2) return fail(fmt::format("logits must be 2-d [n, c]; got shape {}", formatShape(logits.shape)), 0);
  if (labels.shape != logits.shape || labels.dtype != logits.dtype)
    return fail(fmt::format("labels must have the logits' type {}; got {}", typeText(logits), typeText(labels)), 1);
  return std::vector<TensorType>{{logits.dtype, {logits.shape[0]}}, logits};
}

std::vector<TensorValue> softmaxCrossEntropy(const TensorValue& logits, const TensorValue& labels) {
  int64_t n = logits.shape[0], c = logits.shape[1];
  TensorValue loss = TensorValue::zeros({n}), grad = TensorValue::zeros({n, c});
  for (int64_t i = 0; i < n; ++i) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < c; ++j) mx = std::max(mx, logits.data[i * c + j]);
    for (int64_t j = 0; j < c; ++j) sum += std::exp(logits.data[i * c + j] - mx);
    for (int64_t j = 0; j < c; ++j) {
      double logp = logits.data[i * c + j] - mx - std::log(sum);
      loss.data[i] -= labels.data[i * c + j] * logp;
      grad.data[i * c + j] = std::exp(logp) - labels.data[i * c + j];
    }
  }
  return {loss, grad};
}

class SoftmaxCrossEntropy : public OpFamilyRules {
 public:
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"SoftmaxCrossEntropyWithLogits", OpFamily::SoftmaxCrossEntropy, {tensor("logits"), tensor("labels")}, {}});
    defs.back().results = 2;  // loss, gradient
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferSoftmaxCrossEntropy(in);
  }
  std::vector<TensorValue> evaluate(const Op&, const KernelInputs& in, const std::vector<TensorType>&) const override {
    return softmaxCrossEntropy(*in[0], *in[1]);
  }
  void sample(const OpDef&, OpSample& s) const override { s.operands.push_back(s.operands[0]); }
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
