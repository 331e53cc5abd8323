#pragma once
// Pipeline slot 3 (dump `step_parallel_end`).
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createRedistributionPass(const CompileOptions& options);

}  // namespace irc
