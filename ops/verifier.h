#pragma once
// Structural checks of a graph: operand kinds and counts against the op definitions, result
// types equal to what shape inference gives, every value defined before use, `order` a
// topological order of all ops, and graph outputs defined. The pass manager runs it after every
// pass that changed the graph; a failure there is a bug in that pass.
#include <string>
#include <vector>

#include "ir/graph.h"

namespace irc {

// Empty when the graph is well formed; otherwise one line per problem.
std::vector<std::string> verifyGraph(const Graph& graph);

}  // namespace irc
