#pragma once
// A graph as irc's YAML model (spec/model-format.md), for `irc import MODEL.onnx`: inputs and
// parameters with shapes and dtypes, every op with its operands (values by name, constants in
// place) and its attributes that differ from their defaults, the configured strategies, and the
// outputs. Loading the text gives back the same graph (op results are referred to by their op's
// name, as the format does; the ONNX tensor names of op results are not kept).
#include <string>
#include <utility>
#include <vector>

#include "plan/parallel_config.h"
#include "ir/graph.h"

namespace irc {

// `settings`: the parallel block written (device_num, search_mode); the graph's own when null.
std::string writeModelYaml(const Graph& graph, const ParallelSettings& settings);

// A plan as a model a user edits and compiles again (`--plan-out`, docs/search.md): the graph as
// it is compiled, with every setting of `settings` that shapes the plan (devices, pipeline stages
// and micro-batches, training, optimizer and its sharding, precision, budget, the cluster's
// figures), each op's configured strategy, `stages:` where an op starts a later stage than what
// it reads, and `recompute:` with one entry per checkpoint.
std::string writePlanModelYaml(const Graph& graph, const ParallelSettings& settings);

// The plan's `stages:` entries: the ops that run in a later stage than every op they read (the
// loader puts an unnamed op in the latest stage of what it reads), with their stage.
std::vector<std::pair<std::string, int32_t>> stageEntries(const Graph& graph, int64_t pipelineStages);

// The compile's choices that differ from the defaults (global_rank, redistribution,
// factor_strategy, enable_alltoall, cost_model) as a YAML flow map, and a cluster as its
// `cluster: {...}` line with every figure: what a plan writes so that it compiles the same.
std::string compileChoicesYaml(const ParallelSettings& settings);
std::string clusterBlockYaml(const ClusterDescription& cluster);
// The plan's `recompute:` entries, one per checkpoint: the glob of its ops' common name prefix
// when it names exactly them ("l3_*"), else their names (one checkpoint of a list entry).
std::vector<std::vector<std::string>> recomputeEntries(const Graph& graph);

}  // namespace irc
