#pragma once
// MindSpore's strategy checkpoint (the JSON its `strategy_ckpt_config` saves and loads):
//   {"current_stage": 0,
//    "parallel_strategy_item": {NODE: {"stage": 0, "parallel_strategy": [[2, 1], [1, 4]]}},
//    "parallel_layout_item": {PARAM: {"dev_matrix": [...], "tensor_map": [...], "tensor_shape": [...],
//                                     "field": 0, "opt_weight_shard_step": 0, "opt_weight_shard_size": 0}}}
// NODE is an op's `ms_name` when the model gives one, else its name. Loading fixes every op the
// checkpoint names to that strategy: strategy propagation runs once without the checkpoint, and
// each op that would get another strategy is configured with the checkpoint's (as MindSpore
// configures loaded ops) before propagation runs for real. An op that gets the checkpoint's
// strategy anyway is left as it was, so a checkpoint written by irc and read back changes
// nothing: the dumps are byte-identical.
#include <string>

#include "ir/diagnostics.h"
#include "ir/graph.h"

namespace irc {

// The checkpoint of a compiled graph: every op's strategy, every parameter's layout; its
// current_stage is that of `globalRank` (the compile's parallel.global_rank).
std::string strategyCheckpointJson(const Graph& graph, int64_t globalRank);

// Configures the graph's ops from a checkpoint's text. Problems with the file are located
// diagnostics in `diags` (an engine holding the checkpoint's name and text); returns false when
// any was found.
bool applyStrategyCheckpoint(Graph& graph, const std::string& text, DiagnosticEngine& diags);

}  // namespace irc
