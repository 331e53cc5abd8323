#pragma once
// A pipeline schedule (`parallel.pipeline_schedule`, docs/pipeline.md) and what it decides, each
// fact written once: its name in irc's and MindSpore's words, whether its backward is split into
// input and weight gradients, whether a plan file names it, the micro-batches a stage holds at
// its peak. The order of each stage's forward and backward slots is plan/pipeline_order.h's; the
// bubble each order leaves is the step model's (cost/step_schedule.h), which runs that order.
// Adding a schedule: docs/adding-an-op.md, "Adding a schedule".
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace irc {

// GPipe (every forward, then every backward), 1F1B (PipeDream-Flush), Megatron's interleaved 1F1B
// (with virtual stages), and zero-bubble ZB-H1 (Qi et al. 2023: the backward split into its input
// gradient and its weight gradient, the weight gradients filling the bubble under 1F1B's memory).
enum class PipelineSchedule { Gpipe, OneFOneB, Interleaved, ZeroBubble };

struct ScheduleTraits {
  PipelineSchedule schedule;
  const char* name;  // parallel.pipeline_schedule's value
  // MindSpore's AutoParallel.pipeline(scheduler=...) for it (gpipe, 1f1b, seqpipe, seqvpp,
  // seqsmartvpp, zero_bubble_v); null where MindSpore has none (ZB-H1).
  const char* mindsporeScheduler;
  // The backward runs as two passes, the input gradient B and the weight gradient W.
  bool splitsWeightGradient;
  // A plan file or a model writes it (1F1B is the default; the interleaved schedule follows from
  // virtual_stages).
  bool named;
  // The micro-batches whose saved activations stage `stage` holds at its peak, in whole-stage
  // units (P stages, v virtual stages each, M micro-batches).
  double inFlight(int64_t stage, int64_t P, int64_t v, int64_t M) const;
};

const ScheduleTraits& traitsOf(PipelineSchedule s);
std::string_view pipelineScheduleName(PipelineSchedule s);
std::optional<PipelineSchedule> parsePipelineSchedule(std::string_view s);
const std::vector<std::string>& pipelineScheduleNames();

}  // namespace irc
