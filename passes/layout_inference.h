#pragma once
// Pipeline slot 2 (dump `tensor_layout`).
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createLayoutInferencePass(const CompileOptions& options);
// (The plan's query API, layoutOfValue and layoutNeeded: plan/plan_queries.h.)

}  // namespace irc
