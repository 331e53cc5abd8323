#include "cost/stage_estimate.h"

#include <algorithm>

#include "cost/memory_estimate.h"
#include "cost/step_cost.h"
#include "ir/redist_step.h"
#include "plan/stage_view.h"

namespace irc {

double inFlightMicroBatches(int64_t stage, const ParallelSettings& s) {
  const int64_t P = s.pipelineStages, v = s.virtualStages;
  // GPipe runs every forward before the first backward: each stage holds them all.
  if (s.schedule() == PipelineSchedule::Gpipe) return static_cast<double>(s.microBatches);
  // ZB-H1 lets every stage hold what 1F1B's first does: P micro-batches whose weight gradient is due.
  if (s.schedule() == PipelineSchedule::ZeroBubble) return static_cast<double>(std::min(P, s.microBatches));
  if (v <= 1) return static_cast<double>(std::min(P - stage, s.microBatches));
  // Megatron's interleaved 1F1B: rank s warms up with (P - s - 1) * 2 + (v - 1) * P chunk
  // micro-batches, then holds one more in its steady state, of M * v in all; a chunk holds a
  // v-th of the stage's layers (stage 0: P + (P - 1) / v, Korthikanti et al. 2022, §4.2.3).
  const int64_t chunks = std::min((P - stage - 1) * 2 + (v - 1) * P + 1, s.microBatches * v);
  return static_cast<double>(chunks) / static_cast<double>(v);
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
