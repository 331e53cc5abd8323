#pragma once
// Pipeline slot 3 (dump `step_parallel_end`).
#include <memory>

#include "passes/compile_options.h"
#include "passes/pass.h"

namespace irc {

std::unique_ptr<Pass> createRedistributionPass(const CompileOptions& options);

}  // namespace irc
