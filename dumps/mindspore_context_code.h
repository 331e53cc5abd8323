#pragma once
// What --mindspore-out writes beside the shards: the plan's pipeline (stages, each cell's stage,
// micro-batches, scheduler), optimizer parallel and recompute as MindSpore 2.7's
// mindspore.parallel.auto_parallel.AutoParallel and mindspore.parallel.Pipeline take them, and a
// `# not expressible:` line (with a warning) for each setting irc's figures assume that they
// cannot say (docs/plan-code.md).
#include "dumps/plan_code.h"

namespace irc {

PlanCode mindsporeContextCode(const Graph& graph, const CompileOptions& options);

}  // namespace irc
