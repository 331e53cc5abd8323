#pragma once
// `irc explain MODEL --time`: where the predicted step goes, in the words of torch.profiler's
// key_averages() table — the step by category (cost/step_schedule.h's
// timeByCategory, adding up to it), then the slowest stage's modules and ops by time over the
// step's micro-batches, each with its share and the TFLOP/s a device it achieves.
#include <string>

#include "plan/parallel_config.h"
#include "ir/graph.h"

namespace irc {

// Needs a cluster and a compiled graph (layouts inferred); an empty string otherwise.
std::string explainTimeText(const Graph& graph, const ParallelSettings& settings, size_t top = 10);

}  // namespace irc
