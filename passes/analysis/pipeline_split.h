#pragma once
// Pipeline parallelism as MindSpore's pipeline split compiles it (docs/pipeline.md): each op runs
// in one stage of `deviceNum` ranks; a value read by a later stage crosses by a Send on the
// producing stage's ranks and a Receive on the consuming stage's, the rank at the same position
// in both; redistribution to what the consumer needs happens after the Receive.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/manager/compile_options.h"
#include "passes/analysis/memory_estimate.h"

namespace irc {

// `stages: auto`: the split of the execution order into pipeline_stages contiguous runs that
// minimises the slowest stage's estimated time (passes/analysis/step_cost.h) with every stage's 1F1B
// memory within the budget, if any. Exact for the order given (a binary search on the slowest
// stage's time with a greedy cut, which is optimal for contiguous splits). Needs layouts.
void assignAutoStages(Graph& graph, const CompileOptions& options);

// After redistribution: the Send/Receive pairs of every value crossing stages (recorded in
// graph.transfers), in the global order right before the value's first reader in the later stage.
void insertPipelineTransfers(Graph& graph, const CompileOptions& options);

// A rank of `stage` runs its stage's ops: they alone stay in the order, with the inputs and
// parameters they read; a Receive gets its data from the other stage, not from its Send; the
// stage returns what leaves it (its Sends) unless it computes graph outputs.
void keepPipelineStage(Graph& graph, int32_t stage);

// An op's virtual stage (chunk * P + stage; its stage without virtual stages).
inline int64_t virtualStageOf(const Op& op, int64_t pipelineStages) {
  return static_cast<int64_t>(op.chunk) * pipelineStages + op.stage;
}

// The micro-batches whose saved activations stage `stage` holds at its peak, in whole-stage
// units: 1F1B's min(P - stage, M); zero-bubble's min(P, M) on every stage (1F1B's first
// stage's, the most a stage of 1F1B holds); GPipe's M; the interleaved schedule's chunks in
// flight over v.
double inFlightMicroBatches(int64_t stage, const ParallelSettings& settings);

// The schedule's idle share of a step: (P - 1) / v stage-slots of bubble against M of work
// (Narayanan et al. 2021: the interleaved schedule divides 1F1B's bubble by v).
inline double bubbleFraction(const ParallelSettings& s) {
  const double bubble = static_cast<double>(s.pipelineStages - 1) / static_cast<double>(std::max<int64_t>(1, s.virtualStages));
  return bubble / (static_cast<double>(s.microBatches) + bubble);
}

// One rank of `stage`'s memory (passes/analysis/memory_estimate.h on the stage's ops; the shapes are one
// micro-batch's): in training under 1F1B the peak holds min(P - stage, M) micro-batches' saved
// activations.
MemoryEstimate estimateStageMemory(const Graph& graph, const ParallelSettings& settings, int32_t stage);

// The fullest rank's peaks (of every stage's ranks when the graph is pipelined): a training
// step's from the second step on and its first step's, or inference's peak for both.
struct RankPeaks {
  double steady = 0, firstStep = 0;
};
RankPeaks fullestRankPeaks(const Graph& graph, const ParallelSettings& settings);

// `recompute_layers`: on each stage the first so many of its layers (an op's layer: the first
// number among its module path's parts, `model.layers.3.mlp` -> 3) run their forward again before
// their backward. The error, naming the stage, when a stage has fewer layers than its count.
std::optional<std::string> applyRecomputeLayers(Graph& graph, const ParallelSettings& settings);

// Per stage of a compiled graph: its model ops' estimated step time.
std::vector<double> stageSeconds(const Graph& graph, const ParallelSettings& settings);

}  // namespace irc
