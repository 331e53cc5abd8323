#pragma once
// The order a pipeline stage runs its micro-batches' forward and backward passes in, and when
// each runs once every pass's duration is known: 1F1B (PipeDream-Flush, Narayanan et al. 2021),
// Megatron-LM's interleaved 1F1B with virtual stages, and inference's forward-only fill.
#include <cstdint>
#include <vector>

namespace irc {

// One pass of one micro-batch through one of a stage's model chunks.
struct PipelinePass {
  int64_t microBatch = 0;
  int32_t chunk = 0;
  bool forward = true;
};

// Per stage, its passes in the order it runs them. 1F1B: stage s warms up with min(P - s - 1, M)
// forwards, then alternates one forward and one backward, then drains the backwards. With v > 1
// chunks, Megatron-LM's interleaved schedule (megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_with_interleaving): warm-up (P - s - 1) * 2 + (v - 1) * P chunk
// passes, the k-th forward of a stage taking chunk (k mod P v) / P of micro-batch
// (k / P v) * P + k mod P, the k-th backward the chunks in reverse; M must be a multiple of P.
// Inference: the forwards alone, in that order.
std::vector<std::vector<PipelinePass>> pipelineOrder(int64_t stages, int64_t microBatches, int64_t chunks, bool training);

// When each pass starts, given every pass's duration (seconds[stage][chunk], forward and
// backward): a stage runs its passes in order, each as soon as the stage is free and its input
// is there — a forward after the same micro-batch's forward on the virtual stage before it
// (chunk * P + stage - 1), a backward after the backward on the virtual stage after it, the
// last virtual stage's backward after its own forward. Per stage, per pass of `order`.
struct PassSeconds {
  std::vector<std::vector<double>> forward, backward;  // [stage][chunk]
};
std::vector<std::vector<double>> pipelineStarts(const std::vector<std::vector<PipelinePass>>& order, const PassSeconds& seconds);

// When the last pass ends.
double pipelineSpan(const std::vector<std::vector<PipelinePass>>& order, const PassSeconds& seconds);

}  // namespace irc
