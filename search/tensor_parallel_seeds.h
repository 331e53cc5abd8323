#pragma once
// Megatron-LM's tensor parallelism found in a graph's structure, as the strategies the structural
// search configures (search/configuration_search.h) and sharding propagation completes: a MatMul
// by a 2-D weight is column-parallel (its output features split over `tp` ranks) unless what it
// reads is already split on its features by an earlier column-parallel product, then it is
// row-parallel (its contraction split; its result partial, completed by an AllReduce) — the
// attention's q/k/v and output projections, the MLP's up and down projections, the vocabulary-
// parallel head. A lookup into a weight keeps the table whole and splits the indices. Every
// seed splits the activation's leading (batch) dimension over `dp` data-parallel replicas.
// Sequence parallelism (Megatron-LM's, Korthikanti et al. 2022): the norms and residual adds
// between the products split their tokens over the `tp` ranks too, so what they keep for the
// backward (and a checkpointed layer's input) is 1/tp of it; the products' inputs are gathered
// and their partial results reduce-scattered where the layouts meet.
#include <cstdint>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "plan/parallel_dims.h"

namespace irc {

// Expert parallelism (`ep`, dividing `dp`): a grouped product of dispatched tokens [groups, E,
// slots, .] by per-expert weights [E, ., .] splits the experts over ep of the data-parallel
// ranks (the groups over the other dp / ep), as Megatron-Core folds EP inside DP; the tokens reach
// their experts by AlltoAll. With TP each expert's products are column- then row-parallel over
// the tp ranks (expert tensor parallelism = TP, Megatron-Core's default), the tokens whole on
// each of them; the router stays whole.
//
// Context parallelism (`cp`, Megatron's and MindFormers' context_parallel; Llama 3's 131k run):
// every sequence's tokens split cp ways for the whole layer — the activations' token dim over
// the cp ranks after the data-parallel ones — and attention's products computing their query
// chunk against keys and values whole over the cp ranks (gathered by the redistribution: Llama
// 3's all-gather variant): [B, heads, S, d] seeded [dp, tp, cp, 1] by [dp, tp, 1, 1].
//
// Sets in_strategy on the graph's weight products and lookups; the error when a split does not
// divide a dimension it splits (the graph is then partly seeded: use a copy).
// The degrees read: dp, tp, sp, ep and cp (expert tensor parallelism is tp here).
std::optional<std::string> seedTensorParallel(Graph& graph, const ParallelDims& dims);

// An attention product: a BatchMatMul of two 4-D activations [B, heads, S, .] (the scores from
// queries and keys, the context from probabilities and values).
bool isAttentionProduct(const Graph& graph, const Op& op);

// The experts of the graph's grouped expert products (the largest E), 0 without any, and the
// elements of their weights.
std::pair<int64_t, double> expertsOf(const Graph& graph);

}  // namespace irc
