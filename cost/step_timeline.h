#pragma once
// The estimated step laid out in time (docs/cluster.md, "The step as a timeline"): the schedule
// cost/step_schedule.h prices, not a second model. Every pipeline slot is the slowest
// stage's (the estimate charges (M + P - 1) of them), its micro-batch's ops inside it at their
// own times, the gap after them the wait on the slowest stage; the data-parallel reduction
// overlapping the last backward as the estimate overlaps it; the update after what it exposes.
// Its span is the estimate's total and each stage's memory counter peaks at the stage's
// training peak (cost/memory_estimate.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/parallel_config.h"
#include "cost/step_schedule.h"

namespace irc {

enum class TimelineStream { Compute, Collectives, PipelineTransfers, GradientSync };
enum class TimelinePhase { Forward, Backward, Optimizer, Step };

const char* timelineStreamName(TimelineStream stream);
const char* timelinePhaseName(TimelinePhase phase);

struct TimelineSlice {
  int32_t stage = 0;
  TimelineStream stream = TimelineStream::Compute;
  TimelinePhase phase = TimelinePhase::Forward;
  std::string name;
  OpId op = kNoId;          // the model op whose kernel or collective it is; kNoId otherwise
  bool slot = false;        // a micro-batch's whole forward or backward on the stage: the ops nest in it
  int64_t microBatch = -1;  // -1: once a step
  int32_t chunk = 0;
  double start = 0, seconds = 0;
  double flops = 0;  // a device's, of a kernel
};

// A stage's allocated bytes from `time` on.
struct MemorySample {
  int32_t stage = 0;
  double time = 0, bytes = 0;
};

struct StepTimeline {
  ClusterStepEstimate estimate;
  int64_t stages = 1, microBatches = 1, chunks = 1;
  bool training = false;
  double span = 0;
  std::vector<TimelineSlice> slices;   // by stage, then start
  std::vector<MemorySample> memory;    // by stage, then time
  std::vector<double> stagePeakBytes;  // each stage's reported peak (training: the steady step's)
};

// Needs a cluster and the compiled global graph (after redistribution and the pipeline's
// transfers); nullopt without a cluster.
std::optional<StepTimeline> stepTimeline(const Graph& graph, const ParallelSettings& settings);

}  // namespace irc
