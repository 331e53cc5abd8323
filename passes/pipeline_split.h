#pragma once
// Pipeline parallelism as MindSpore's pipeline split compiles it (docs/pipeline.md): each op runs
// in one stage of `deviceNum` ranks; a value read by a later stage crosses by a Send on the
// producing stage's ranks and a Receive on the consuming stage's, the rank at the same position
// in both; redistribution to what the consumer needs happens after the Receive.
#include <vector>

#include "ir/graph.h"
#include "passes/compile_options.h"

namespace irc {

// `stages: auto`: the split of the execution order into pipeline_stages contiguous runs that
// minimises the slowest stage's estimated time (passes/step_cost.h) with every stage's 1F1B
// memory within the budget, if any. Exact for the order given (a binary search on the slowest
// stage's time with a greedy cut, which is optimal for contiguous splits). Needs layouts.
void assignAutoStages(Graph& graph, const CompileOptions& options);

// After redistribution: the Send/Receive pairs of every value crossing stages (recorded in
// graph.transfers), in the global order right before the value's first reader in the later stage.
void insertPipelineTransfers(Graph& graph, const CompileOptions& options);

// Per stage of a compiled graph: its model ops' estimated step time.
std::vector<double> stageSeconds(const Graph& graph, const ParallelSettings& settings);

}  // namespace irc
