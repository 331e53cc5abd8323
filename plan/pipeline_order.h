#pragma once
// The order a pipeline stage runs its micro-batches' passes in, and when each runs once every
// pass's duration is known (docs/pipeline.md, "Schedules"): GPipe, 1F1B (PipeDream-Flush,
// Narayanan et al. 2021), Megatron-LM's interleaved 1F1B with virtual stages, and zero-bubble
// ZB-H1 (Qi et al. 2023), whose backward is two passes: the input gradient (B) and the weight
// gradient (W).
#include <cstdint>
#include <vector>

#include "plan/pipeline_schedule.h"

namespace irc {

// A pass of one micro-batch through one of a stage's model chunks. `Backward` is the whole
// backward, except under zero-bubble where it is the input gradient and `Weight` the rest.
enum class PassKind { Forward, Backward, Weight };
struct PipelinePass {
  int64_t microBatch = 0;
  int32_t chunk = 0;
  PassKind kind = PassKind::Forward;
  bool forward() const { return kind == PassKind::Forward; }
};

// Each pass's seconds, [stage][chunk]: forward, backward (zero-bubble: its input gradient), and
// under zero-bubble the weight gradient.
struct PassSeconds {
  std::vector<std::vector<double>> forward, backward, weight;
  double of(const PipelinePass& p, int64_t stage) const {
    const auto& table = p.kind == PassKind::Forward ? forward : p.kind == PassKind::Backward ? backward : weight;
    return table[stage][p.chunk];
  }
};

// Per stage, its passes in the order it runs them, for the schedules whose order is fixed.
// GPipe: every forward, then every backward. 1F1B: stage s warms up with min(P - s - 1, M)
// forwards, then alternates one forward and one backward, then drains the backwards. With v > 1
// chunks, Megatron-LM's interleaved schedule (megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving): warm-up (P - s - 1) * 2 + (v - 1) * P chunk
// passes, the k-th forward of a stage taking chunk (k mod P v) / P of micro-batch
// (k / P v) * P + k mod P, the k-th backward the chunks in reverse; M must be a multiple of P.
// Zero-bubble (ZB-H1, one chunk a stage): 1F1B's order with the backward's weight gradients
// apart, each stage holding up to P micro-batches whose weight gradient is due (below).
// Inference: the forwards alone.
std::vector<std::vector<PipelinePass>> pipelineOrder(int64_t stages, int64_t microBatches, int64_t chunks, bool training,
                                                     PipelineSchedule schedule = PipelineSchedule::OneFOneB);

// When each pass of `order` starts: a stage runs its passes in order, each as soon as the stage
// is free and its input is there — a forward after the same micro-batch's forward on the
// virtual stage before it (chunk * P + stage - 1), a backward after the backward on the virtual
// stage after it (the last virtual stage's after its own forward), a weight gradient after its
// own backward. Per stage, per pass.
std::vector<std::vector<double>> pipelineStarts(const std::vector<std::vector<PipelinePass>>& order, const PassSeconds& seconds);

// A schedule run through: its passes in order with their starts, and when the last ends.
struct PipelineRun {
  std::vector<std::vector<PipelinePass>> order;
  std::vector<std::vector<double>> starts;
  double span = 0;
};
PipelineRun runPipeline(PipelineSchedule schedule, int64_t stages, int64_t microBatches, int64_t chunks, bool training,
                        const PassSeconds& seconds);

}  // namespace irc
