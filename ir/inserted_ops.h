#pragma once
// Building the ops the passes insert (forward ops, redistribution steps) and giving them a
// rank's arguments: groups with MindSpore's names, StridedSlice bounds.
#include <string>

#include "ir/graph.h"

namespace irc {

// The op type a step becomes (the Gather step's AllGather; Split steps are StridedSlices).
std::string opTypeOfStep(const RedistStep& step);

// Sets the rank's attrs and constants on an inserted op from its step (no-op without one).
void materializeForRank(Op& op, int64_t rank);
// An inserted op as `rank` sees it: what a dump or report shows of it (names, operands, attrs,
// results, location, reason, step) copied and materialized; its empty parallel state and
// annotation are not copied.
Op materializedCopy(const Op& inserted, int64_t rank);

// The model value behind `v`: back through the inserted ops (forward ops, redistributions, a
// replace graph, mirrors) that sit between it and an input, parameter or model op result.
ValueId modelValueBehind(const Graph& graph, ValueId v);

}  // namespace irc
