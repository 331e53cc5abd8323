#include "passes/attention_fusion.h"

#include <algorithm>

#include "ops/op_family.h"

namespace irc {
namespace {

// A product: a factor contracted between two of its operands (MatMul, BatchMatMul, Einsum).
bool isProduct(const Op& op) {
  if (op.inserted() || !op.parallel->rule) return false;
  const OpRule& rule = *op.parallel->rule;
  for (int f = 0; f < rule.factorCount(); ++f) {
    if (!rule.isReduction(f)) continue;
    int holders = 0;
    for (const DimFactors& dims : rule.operands)
      if (std::any_of(dims.begin(), dims.end(), [&](const std::vector<int>& fs) { return std::count(fs.begin(), fs.end(), f) > 0; }))
        ++holders;
    if (holders >= 2) return true;
  }
  return false;
}

}  // namespace

std::vector<bool> fusedAttentionValues(const Graph& graph) {
  std::vector<int> readers(graph.values.size(), 0);
  std::vector<OpId> reader(graph.values.size(), kNoId);
  for (OpId id : graph.order)
    for (const Operand& o : graph.op(id).operands)
      if (o.isValue()) {
        ++readers[o.value];
        reader[o.value] = id;
      }
  for (ValueId v : graph.outputs) readers[v] += 2;  // an output leaves the kernel
  std::vector<bool> onChip(graph.values.size(), false);
  using Part = OpFamilyRules::AttentionPart;
  for (OpId id : graph.order) {
    const Op& softmax = graph.op(id);
    if (softmax.inserted() || rulesOf(softmax).attentionPart(softmax) != Part::Softmax || softmax.results.empty()) continue;
    ValueId probs = softmax.results[0];
    if (readers[probs] != 1 || !isProduct(graph.op(reader[probs]))) continue;
    // Back from the softmax through elementwise ops on the scores' shape to the scores' product.
    std::vector<ValueId> chain = {probs};
    const Shape& shape = graph.value(probs).type.shape;
    auto onScores = [&](const Op& op) -> ValueId {
      for (const Operand& o : op.operands)
        if (o.isValue() && graph.value(o.value).type.shape == shape) return o.value;
      return kNoId;
    };
    ValueId v = onScores(softmax);
    bool fused = false;
    while (v != kNoId && readers[v] == 1 && graph.value(v).producer != kNoId) {
      const Op& producer = graph.op(graph.value(v).producer);
      chain.push_back(v);
      if (isProduct(producer)) {
        fused = true;
        break;
      }
      if (producer.inserted() || rulesOf(producer).attentionPart(producer) != Part::Elementwise) break;
      v = onScores(producer);
    }
    if (fused)
      for (ValueId c : chain) onChip[c] = true;
  }
  return onChip;
}

}  // namespace irc
