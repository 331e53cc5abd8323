#pragma once
// The two propagation algorithms (spec/parallel-semantics.md §5 and §6), run by the
// strategy-propagation pass after the configured ops got their shardings.
#include "ir/graph.h"
#include "passes/pass.h"
#include "passes/propagation_common.h"

namespace irc {

// MindSpore's cost-based BFS from the configured ops and fixed layouts.
bool runShardingPropagation(Graph& graph, const PropagationInput& in, PassContext& context);
// Shardy's factor propagation with user and op priorities, to a fixed point.
bool runFactorPropagation(Graph& graph, const PropagationInput& in, PassContext& context);

}  // namespace irc
