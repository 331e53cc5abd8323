#include "passes/analysis/attention_fusion.h"

#include <algorithm>

#include "ops/op_family.h"
#include "passes/analysis/step_cost.h"

namespace irc {
namespace {

bool isProductOp(const Op& op) { return !op.inserted() && op.parallel->rule && isProduct(*op.parallel->rule); }

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
    if (readers[probs] != 1 || !isProductOp(graph.op(reader[probs]))) continue;
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
      if (isProductOp(producer)) {
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
