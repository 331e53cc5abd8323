#pragma once
// `irc explain`: a plain-text account of one op of a compiled graph — a model op's strategy and
// where it came from, or why an inserted op is there (the edge, both layouts, the plan step, the
// rank's group and bounds, the bytes it sends).
#include <optional>
#include <string>

#include "plan/parallel_config.h"
#include "ir/graph.h"

namespace irc {

// nullopt when `name` names no op (model or inserted) of the graph.
// `settings` with a cluster: an inserted collective's time on it and the link it crosses.
std::optional<std::string> explainOp(const Graph& graph, const std::string& name, int64_t rank,
                                     const ParallelSettings* settings = nullptr);

// `irc explain MODEL --search`: the configuration search_mode auto chose (the structural search's:
// mesh, micro-batching, recompute, optimizer level, stages) with its estimate, and the best
// others with theirs and why each lost; for the operator-level search, its account.
std::string explainSearchText(const SearchSummary& search);

}  // namespace irc
