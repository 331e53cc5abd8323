#pragma once
// search_mode auto (docs/search.md): every op the user did not configure gets the strategy that
// minimises the estimated step time (cost/step_cost.h) with every rank's peak memory within
// parallel.memory_budget. An ILP with a one-hot choice per op and per edge (XLA's auto-sharding
// and Alpa's formulation), solved by CBC; the ops of repeated layers share their variables.
#include "ir/graph.h"
#include "passes/manager/pass.h"
#include "passes/propagation/propagation_common.h"

namespace irc {

// Gives every op with a rule a sharding (origin Searched, or the configured one kept) and stores
// the search's account in graph.search. False (with a diagnostic) when no plan meets the budget
// or the solver found none within its time limit.
bool runAutoSearch(Graph& graph, const PropagationInput& in, PassContext& context);

// The search's grouping of ops into classes: the name with the layer indices inside it (a digit
// run followed by '.', '/' or '_') replaced by '#': "l3.q" and "l7.q" are one op of a repeated
// layer, "op3" and "op7" are not.
std::string layerPattern(const std::string& name);

}  // namespace irc
