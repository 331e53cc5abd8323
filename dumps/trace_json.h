#pragma once
// The estimated step (cost/step_timeline.h) in the Chrome Trace Event format that
// Perfetto's UI and chrome://tracing open (docs/cluster.md, "The step as a timeline"): a process
// per pipeline stage (its first rank; with `allRanks` a process per rank, each its stage's), a
// thread per stream, a complete event ("ph": "X", microseconds) per pass, op, collective and
// update, and a counter ("ph": "C") of the allocated bytes.
#include <ostream>

#include "ir/graph.h"
#include "plan/parallel_config.h"
#include "cost/step_timeline.h"

namespace irc {

void writeChromeTrace(std::ostream& out, const StepTimeline& timeline, const Graph& graph, const ParallelSettings& settings,
                      bool allRanks);

}  // namespace irc
