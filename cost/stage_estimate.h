#pragma once
// What a pipeline stage costs (docs/pipeline.md): its micro-batches in flight, its memory, its
// time. The stages themselves are assigned by passes/stage_assignment.cc, their transfers
// inserted by passes/pipeline_transfers.cc.
#include <algorithm>
#include <vector>

#include "cost/memory_estimate.h"
#include "ir/graph.h"
#include "plan/parallel_config.h"

namespace irc {

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

// One rank of `stage`'s memory (cost/memory_estimate.h on the stage's ops; the shapes are one
// micro-batch's): in training under 1F1B the peak holds min(P - stage, M) micro-batches' saved
// activations.
MemoryEstimate estimateStageMemory(const Graph& graph, const ParallelSettings& settings, int32_t stage);

// The fullest rank's peaks (of every stage's ranks when the graph is pipelined): a training
// step's from the second step on and its first step's, or inference's peak for both.
struct RankPeaks {
  double steady = 0, firstStep = 0;
};
RankPeaks fullestRankPeaks(const Graph& graph, const ParallelSettings& settings);

// Per stage of a compiled graph: its model ops' estimated step time.
std::vector<double> stageSeconds(const Graph& graph, const ParallelSettings& settings);

}  // namespace irc
