#pragma once
// A pipeline stage's program as its ranks run it (docs/pipeline.md): shape slicing makes a rank's
// local graph with it, the memory estimate a stage's view.
#include <cstdint>

#include "ir/graph.h"

namespace irc {

// A rank of `stage` runs its stage's ops: they alone stay in the order, with the inputs and
// parameters they read; a Receive gets its data from the other stage, not from its Send; the
// stage returns what leaves it (its Sends) unless it computes graph outputs.
void keepPipelineStage(Graph& graph, int32_t stage);

// An op's virtual stage (chunk * P + stage; its stage without virtual stages).
inline int64_t virtualStageOf(const Op& op, int64_t pipelineStages) {
  return static_cast<int64_t>(op.chunk) * pipelineStages + op.stage;
}

}  // namespace irc
