#pragma once
// The step's batch split into micro-batches (`input_batch: step`, MindSpore's PipelineCell): the
// inputs' leading dimension holds the whole step's samples; each micro-batch's program is the
// same graph on fewer samples. The graph is re-typed for the micro-batch: every input's leading
// dimension, and every shape an op writes out (a Reshape's or BroadcastTo's target) whose leading
// dimension carries the batch, shrink by the same factor.
#include <cstdint>
#include <optional>
#include <string>

#include "ir/graph.h"

namespace irc {

// The samples the inputs hold: the leading dimension every input of rank >= 1 shares; 0 when
// the graph has no such input or its inputs disagree.
int64_t inputBatchOf(const Graph& graph);

// Re-types `graph` for `batch` samples (a divisor of inputBatchOf(graph)); the error, if the
// graph's shapes do not follow its inputs' batch (nothing changed then is guaranteed only for
// the inputs' check).
std::optional<std::string> splitBatch(Graph& graph, int64_t batch);

}  // namespace irc
