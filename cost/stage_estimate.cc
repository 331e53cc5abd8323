#include "cost/stage_estimate.h"

#include <algorithm>

#include "cost/memory_estimate.h"
#include "cost/step_cost.h"
#include "ops/collective.h"
#include "plan/stage_view.h"

namespace irc {

double inFlightMicroBatches(int64_t stage, const ParallelSettings& s) {
  return traitsOf(s.schedule()).inFlight(stage, s.pipelineStages, s.virtualStages, s.microBatches);
}

MemoryEstimate estimateStageMemory(const Graph& graph, const ParallelSettings& settings, int32_t stage) {
  Graph view = graph;
  keepPipelineStage(view, stage);
  // What the stage sends on gets its gradient back even where it also computes graph outputs
  // (the last stage's earlier chunks under virtual stages): the walk's backward starts there too.
  std::vector<bool> output(view.values.size(), false);
  for (ValueId v : view.outputs) output[v] = true;
  for (OpId id : view.order) {
    const Op& op = view.op(id);
    if (op.step && isSend(*op.step) && !output[op.results[0]])
      view.outputs.push_back(op.results[0]), output[op.results[0]] = true;
  }
  // 1F1B: while stage s runs forward and backward it holds the saved activations of
  // min(P - s, M) micro-batches; the optimizer's update comes after the last one.
  return estimateMemory(view, settings, StepPlace{stage == settings.pipelineStages - 1, inFlightMicroBatches(stage, settings)});
}

RankPeaks fullestRankPeaks(const Graph& graph, const ParallelSettings& settings) {
  RankPeaks peaks;
  auto take = [&](const MemoryEstimate& m) {
    peaks.steady = std::max(peaks.steady, m.training ? m.training->peakBytes : m.inference.peakBytes);
    peaks.firstStep = std::max(peaks.firstStep, m.training ? m.training->firstStepPeakBytes : m.inference.peakBytes);
  };
  if (graph.stageDevices == 0) take(estimateMemory(graph, settings));
  else
    for (int32_t s = 0; s < settings.pipelineStages; ++s) take(estimateStageMemory(graph, settings, s));
  return peaks;
}

std::vector<double> stageSeconds(const Graph& graph, const ParallelSettings& settings) {
  std::vector<double> out(settings.pipelineStages, 0), seconds = opStepSeconds(graph, settings);
  for (OpId id : graph.order)
    if (!graph.op(id).inserted()) out[graph.op(id).stage] += seconds[id];
  return out;
}

}  // namespace irc
