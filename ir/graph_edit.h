#pragma once
// Removing ops from a graph whose ids are dense indices: the survivors are renumbered in their
// old order, and every id that names them (operands, results, producers, the graph's lists) is
// rewritten. For frontends that simplify what they imported, before any pass has run.
#include <vector>

#include "ir/graph.h"

namespace irc {

// Erases the ops marked in `erase` and their results. No surviving op may read an erased result
// and no erased result may be a graph output (the caller rewires them first). Returns, per old
// value id, its new id (kNoId for an erased result).
std::vector<ValueId> eraseOps(Graph& graph, const std::vector<bool>& erase);

}  // namespace irc
