#include "passes/analysis/attention_fusion.h"

#include <algorithm>

#include "ops/op_defs.h"
#include "ops/op_family.h"
#include "passes/analysis/step_cost.h"

namespace irc {
namespace {

bool isProductOp(const Op& op) { return !op.inserted() && op.parallel->rule && isProduct(*op.parallel->rule); }

// Shapes equal but for the last dim (the keys', with or without a sink column).
bool sameRows(const Shape& a, const Shape& b) {
  return a.size() == b.size() && !a.empty() && std::equal(a.begin(), a.end() - 1, b.begin());
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
    if (readers[probs] != 1) continue;
    std::vector<ValueId> chain = {probs};
    // A sink's probability column sliced off before the product with v.
    ValueId toProduct = probs;
    if (const Op& slice = graph.op(reader[probs]);
        !slice.inserted() && familyOf(slice) == OpFamily::Slice && !slice.results.empty() &&
        sameRows(graph.value(slice.results[0]).type.shape, graph.value(probs).type.shape)) {
      toProduct = slice.results[0];
      chain.push_back(toProduct);
    }
    if (readers[toProduct] != 1 || !isProductOp(graph.op(reader[toProduct]))) continue;
    // Back from the softmax through elementwise ops on the scores' shape to the scores' product.
    Shape shape = graph.value(probs).type.shape;
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
      if (!producer.inserted() && familyOf(producer) == OpFamily::Concat && !producer.operands.empty()) {
        // The scores and a sink column joined along the keys: on from the scores.
        const Operand& first = producer.operands[0];
        if (!first.isValue() || !sameRows(graph.value(first.value).type.shape, shape)) break;
        shape = graph.value(first.value).type.shape;
        v = first.value;
        continue;
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
