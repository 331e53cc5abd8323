#include <doctest/doctest.h>

#include "plan/pipeline_schedule.h"

namespace irc::test {

TEST_CASE("pipeline schedules: names, MindSpore's scheduler, the split backward, micro-batches in flight") {
  for (const std::string& name : pipelineScheduleNames()) {
    CAPTURE(name);
    REQUIRE(parsePipelineSchedule(name).has_value());
    CHECK(pipelineScheduleName(*parsePipelineSchedule(name)) == name);
  }
  CHECK_FALSE(parsePipelineSchedule("dualpipe").has_value());
  CHECK(std::string(traitsOf(PipelineSchedule::Gpipe).mindsporeScheduler) == "gpipe");
  CHECK(std::string(traitsOf(PipelineSchedule::Interleaved).mindsporeScheduler) == "1f1b");
  CHECK(traitsOf(PipelineSchedule::ZeroBubble).mindsporeScheduler == nullptr);  // MindSpore has ZB-V only
  CHECK(traitsOf(PipelineSchedule::ZeroBubble).splitsWeightGradient);
  CHECK_FALSE(traitsOf(PipelineSchedule::OneFOneB).splitsWeightGradient);
  CHECK_FALSE(traitsOf(PipelineSchedule::OneFOneB).named);  // the default, never written
  // 4 stages, 8 micro-batches, by hand: 1F1B's stage s holds P - s; GPipe every M; ZB-H1 P on
  // each stage; interleaved with v = 2 on stage 0: (P - 1) * 2 + (v - 1) * P + 1 = 11 chunks of
  // half a stage.
  const ScheduleTraits& oneF = traitsOf(PipelineSchedule::OneFOneB);
  CHECK(oneF.inFlight(0, 4, 1, 8) == 4);
  CHECK(oneF.inFlight(3, 4, 1, 8) == 1);
  CHECK(oneF.inFlight(0, 4, 1, 2) == 2);  // never more than there are micro-batches
  CHECK(traitsOf(PipelineSchedule::Gpipe).inFlight(3, 4, 1, 8) == 8);
  CHECK(traitsOf(PipelineSchedule::ZeroBubble).inFlight(3, 4, 1, 8) == 4);
  CHECK(traitsOf(PipelineSchedule::Interleaved).inFlight(0, 4, 2, 8) == 5.5);
  CHECK(traitsOf(PipelineSchedule::Interleaved).inFlight(3, 4, 2, 8) == 2.5);  // (0 * 2 + 4 + 1) / 2
}

}  // namespace irc::test
