#pragma once
// A step of pipeline slot 3 (before redistribution, no dump of its own): `stages: auto` splits
// the execution order into pipeline stages from the layouts' costs (passes/analysis/pipeline_split.h).
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createStageAssignmentPass(const CompileOptions& options);

}  // namespace irc
