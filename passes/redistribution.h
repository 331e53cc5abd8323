#pragma once
// Pipeline slot 3 (dump `step_parallel_end`).
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createRedistributionPass(const CompileOptions& options);

// Redistribution's precondition, which the steps of its stage check too (a `--passes` run may
// skip layout inference): layouts inferred, nothing inserted yet. False with a diagnostic.
bool readyForRedistribution(const Graph& graph, PassContext& context);

}  // namespace irc
