#pragma once
// The two propagation algorithms (spec/parallel-semantics.md §5 and §6), run by the
// strategy-propagation pass after the configured ops got their shardings.
#include "ir/graph.h"
#include "passes/propagation/propagation_common.h"

namespace irc {

// MindSpore's cost-based BFS from the configured ops and fixed layouts. (Neither algorithm
// rejects anything: the configured strategies were checked before.)
void runShardingPropagation(Graph& graph, const PropagationInput& in);
// Shardy's factor propagation with user and op priorities, to a fixed point.
void runFactorPropagation(Graph& graph, const PropagationInput& in);

}  // namespace irc
