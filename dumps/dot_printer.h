#pragma once
// A picture of a dumped graph in Graphviz's DOT language (`--dump-dot`): one node per input,
// parameter and op, labelled with its op type, strategy and (local) shape; inserted collectives
// filled by type; an edge into a collective labelled with the bytes each rank sends for it.
#include <string>

#include "dumps/ir_printer.h"
#include "ir/graph.h"

namespace irc {

std::string printDot(const Graph& graph, const PrintOptions& options);

}  // namespace irc
