#pragma once
// A step of pipeline slot 3 (before redistribution, no dump of its own): `stages: auto` splits
// the execution order into pipeline stages from the layouts' costs (cost/step_cost.h,
// cost/stage_estimate.h), and `recompute_layers` marks each stage's first layers.
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createStageAssignmentPass(const CompileOptions& options);

}  // namespace irc
