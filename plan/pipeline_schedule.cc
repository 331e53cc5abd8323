#include "plan/pipeline_schedule.h"

#include <algorithm>
#include <array>

namespace irc {
namespace {

// clang-format off
const std::array<ScheduleTraits, 4> kSchedules = {{
    //  schedule                      name                MindSpore  split W  named
    {PipelineSchedule::Gpipe,       "gpipe",            "gpipe",   false,   true},
    {PipelineSchedule::OneFOneB,    "1f1b",             "1f1b",    false,   false},
    {PipelineSchedule::Interleaved, "interleaved_1f1b", "1f1b",    false,   false},
    {PipelineSchedule::ZeroBubble,  "zero_bubble",      nullptr,   true,    true},
}};
// clang-format on

}  // namespace

double ScheduleTraits::inFlight(int64_t stage, int64_t P, int64_t v, int64_t M) const {
  switch (schedule) {
    // GPipe runs every forward before the first backward: each stage holds them all.
    case PipelineSchedule::Gpipe: return static_cast<double>(M);
    // ZB-H1 lets every stage hold what 1F1B's first does: P micro-batches whose weight gradient is due.
    case PipelineSchedule::ZeroBubble: return static_cast<double>(std::min(P, M));
    case PipelineSchedule::OneFOneB:
    case PipelineSchedule::Interleaved: break;
  }
  if (v <= 1) return static_cast<double>(std::min(P - stage, M));
  // Megatron's interleaved 1F1B: rank s warms up with (P - s - 1) * 2 + (v - 1) * P chunk
  // micro-batches, then holds one more in its steady state, of M * v in all; a chunk holds a
  // v-th of the stage's layers (stage 0: P + (P - 1) / v, Korthikanti et al. 2022, §4.2.3).
  const int64_t chunks = std::min((P - stage - 1) * 2 + (v - 1) * P + 1, M * v);
  return static_cast<double>(chunks) / static_cast<double>(v);
}

const ScheduleTraits& traitsOf(PipelineSchedule s) {
  for (const ScheduleTraits& t : kSchedules)
    if (t.schedule == s) return t;
  return kSchedules[1];
}

std::string_view pipelineScheduleName(PipelineSchedule s) { return traitsOf(s).name; }

std::optional<PipelineSchedule> parsePipelineSchedule(std::string_view s) {
  for (const ScheduleTraits& t : kSchedules)
    if (s == t.name) return t.schedule;
  return std::nullopt;
}

const std::vector<std::string>& pipelineScheduleNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ScheduleTraits& t : kSchedules) out.push_back(t.name);
    return out;
  }();
  return names;
}

}  // namespace irc
