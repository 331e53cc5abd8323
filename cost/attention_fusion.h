#pragma once
// What a fused attention kernel (FlashAttention; a cluster's `fused_attention`) keeps on chip:
// in every chain
//   scores = a product of q and k -> elementwise ops on the scores (scale, mask) -> softmax
//          -> a product of the probabilities and v
// the scores, what the elementwise ops make of them and the probabilities, each read by the next
// op of the chain alone. Attention sinks (GPT-OSS; FlashAttention 3 and cuDNN take them as an
// operand) are part of the chain: the scores concatenated with a sink column before the
// softmax, its probabilities sliced back to the keys' after it. The step on a cluster charges them no HBM traffic and the ops
// between the two products no kernel of their own.
#include <vector>

#include "ir/graph.h"

namespace irc {

// Per value of the (compiled) graph: whether it stays on chip.
std::vector<bool> fusedAttentionValues(const Graph& graph);

// Both, per value, from one walk of the chains: what stays on chip, and a grouped-query
// attention's keys or values repeated to every query head (transformers' repeat_kv: a BroadcastTo
// of a size-1 dim, then a Reshape) for a fused chain's product alone. The kernel reads each
// key-value head for its group of query heads itself (FlashAttention 2's and cuDNN's GQA,
// MindSpore's FlashAttentionScore): the repeat is a view of the heads it repeats, never written,
// and what the product keeps for backward is those heads.
struct FusedAttention {
  std::vector<bool> onChip, repeatedKeysAndValues;
};
FusedAttention fusedAttentionOf(const Graph& graph);

}  // namespace irc
