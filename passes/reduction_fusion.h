#pragma once
// A step of pipeline slot 3 (before redistribution, no dump of its own), under `--redistribution
// optimal`: a partial result's reduction moves into its one consumer's edge, where the optimal
// planner plans both together (AllReduce + StridedSlice becomes one ReduceScatter).
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createReductionFusionPass(const CompileOptions& options);

}  // namespace irc
