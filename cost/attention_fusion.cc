#include "cost/attention_fusion.h"

#include <algorithm>

#include "ops/op_defs.h"
#include "ops/op_family.h"
#include "cost/step_cost.h"

namespace irc {
namespace {

bool isProductOp(const Op& op) { return !op.inserted() && op.parallel->rule && isProduct(*op.parallel->rule); }

// Shapes equal but for the last dim (the keys', with or without a sink column).
bool sameRows(const Shape& a, const Shape& b) {
  return a.size() == b.size() && !a.empty() && std::equal(a.begin(), a.end() - 1, b.begin());
}

// Per value, the readers' count and the last reader.
struct Readers {
  std::vector<int> count;
  std::vector<OpId> last;
};

Readers readersOf(const Graph& graph) {
  Readers r{std::vector<int>(graph.values.size(), 0), std::vector<OpId>(graph.values.size(), kNoId)};
  for (OpId id : graph.order)
    for (const Operand& o : graph.op(id).operands)
      if (o.isValue()) {
        ++r.count[o.value];
        r.last[o.value] = id;
      }
  for (ValueId v : graph.outputs) r.count[v] += 2;  // an output leaves the kernel
  return r;
}

// The fused chains: per value whether it stays on chip; `products` collects each chain's two
// products (the scores' and the context's).
std::vector<bool> fusedChains(const Graph& graph, const Readers& r, std::vector<OpId>* products) {
  const std::vector<int>& readers = r.count;
  const std::vector<OpId>& reader = r.last;
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
    OpId scores = kNoId;
    while (v != kNoId && readers[v] == 1 && graph.value(v).producer != kNoId) {
      const Op& producer = graph.op(graph.value(v).producer);
      chain.push_back(v);
      if (isProductOp(producer)) {
        scores = graph.value(v).producer;
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
    if (scores == kNoId) continue;
    for (ValueId c : chain) onChip[c] = true;
    if (products) products->insert(products->end(), {scores, reader[toProduct]});
  }
  return onChip;
}

}  // namespace

std::vector<bool> fusedAttentionValues(const Graph& graph) { return fusedChains(graph, readersOf(graph), nullptr); }

FusedAttention fusedAttentionOf(const Graph& graph) {
  Readers r = readersOf(graph);
  std::vector<OpId> products;
  FusedAttention out{fusedChains(graph, r, &products), std::vector<bool>(graph.values.size(), false)};
  std::vector<bool>& shared = out.repeatedKeysAndValues;
  for (OpId id : products) {
    const Op& product = graph.op(id);
    if (product.operands.size() < 2 || !product.operands[1].isValue()) continue;
    // Back from the keys (values) operand through views read once to the broadcast.
    ValueId u = product.operands[1].value;
    while (r.count[u] == 1 && graph.value(u).producer != kNoId) {
      const Op& producer = graph.op(graph.value(u).producer);
      if (producer.inserted() || !rulesOf(producer).resultIsView(graph, producer) || producer.operands.empty() ||
          !producer.operands[0].isValue())
        break;
      u = producer.operands[0].value;
    }
    if (r.count[u] != 1 || graph.value(u).producer == kNoId) continue;
    const Op& broadcast = graph.op(graph.value(u).producer);
    if (broadcast.inserted() || familyOf(broadcast) != OpFamily::BroadcastTo || broadcast.operands.empty() ||
        !broadcast.operands[0].isValue())
      continue;
    // Only the repeat of each key-value head: dims of size 1 expanded, the rest as they are.
    const Shape& from = graph.value(broadcast.operands[0].value).type.shape;
    const Shape& to = graph.value(u).type.shape;
    bool repeat = from.size() == to.size();
    for (size_t d = 0; repeat && d < from.size(); ++d) repeat = from[d] == to[d] || from[d] == 1;
    if (repeat) shared[u] = true;
  }
  return out;
}

}  // namespace irc
