#pragma once
// The words for where an op's sharding came from (its StrategyOrigin), shared by the dumps, the
// report and `irc explain`.
#include <string>

#include "ir/graph.h"

namespace irc {

// The neighbour's name ("" when it came from none); "factor propagation" for its fixed point.
std::string originSourceName(const Graph& graph, const StrategyOrigin& origin);
// The edge it travelled, "relu -> matmul2" or "mm -> its output sharding" ("" when none).
std::string originEdgeText(const Graph& graph, const Op& op, const StrategyOrigin& origin);

}  // namespace irc
