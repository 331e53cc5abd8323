#pragma once
// The linear layers as Transformer Engine runs them (its Linear, LayerNormLinear, GroupedLinear):
// the products a low-precision recipe runs in FP8 or FP4 (plan/precision.h, docs/cluster.md
// "Precision recipes") and whose tensor-parallel AllGather and ReduceScatter TE overlaps
// (`tp_comm_overlap`). A product of an activation with a trained weight, except the two that
// every stack leaves to plain 16-bit kernels: the output layer (the last product before a graph output, not before a stage's
// Send; Megatron's output_layer is no TE module, DeepSeek-V3 keeps its head in BF16) and the router (a product whose scores
// choose by value: TopK's indices), and a weight whose local matrix is not a multiple of 16 each way (TE's FP8 GEMMs need both
// dims divisible by 16).
#include <vector>

#include "ir/graph.h"

namespace irc {

// Per op (by OpId): its weight operand where the op is such a product, -1 otherwise.
std::vector<int> linearLayerWeightOperands(const Graph& graph);

}  // namespace irc
