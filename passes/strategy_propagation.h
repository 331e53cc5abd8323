#pragma once
// Pipeline slot 1 (dump `step_parallel_begin`): gives every op a strategy, by the search mode
// of the model (spec/model-format.md), one PropagationMode each (passes/propagation/
// propagation_mode.h): sharding_propagation (MindSpore's cost-based BFS), factor_propagation
// (Shardy), data_parallel, semi_auto, auto (the operator-level search).
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createStrategyPropagationPass(const CompileOptions& options);

// What the pass does, on a graph of the caller's (the checkpoint pass's dry run).
PassStatus propagateStrategies(Graph& graph, PassContext& context, const CompileOptions& options);
// False for a model without ops (inputs returned as they are): nothing to shard.
bool hasModelOps(const Graph& graph);

}  // namespace irc
