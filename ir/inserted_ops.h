#pragma once
// Building the ops the passes insert (forward ops, redistribution steps) and giving them a
// rank's arguments: groups with MindSpore's names, StridedSlice bounds.
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace irc {

// The op type a step becomes (the Gather step's AllGather; Split steps are StridedSlices).
std::string_view opTypeOfStep(const RedistStep& step);

// Sets the rank's attrs and constants on an inserted op from its step (no-op without one).
void materializeForRank(Op& op, int64_t rank);

// An inserted op's rank-dependent arguments (a collective's group, a slice's bounds, a vocab
// offset): its attrs and operands as one rank sees them, the rest of the op being the same on
// every rank. A dump or report of the global graph prints these for its rank without copying
// the whole op.
struct RankArgs {
  AttrMap attrs;
  std::vector<Operand> operands;
};
// Whether materializeForRank changes the op (a step of its own kind; not the Split and Concat
// around a gather, which every rank runs alike).
bool hasRankArgs(const Op& op);
RankArgs rankArgs(const Op& op, int64_t rank);
// Whether `op` must be given `rank`'s arguments to show it for that rank: it has rank arguments
// and `graph`'s inserted ops carry another rank's (Graph::insertedOpsRank). Re-deriving them
// for the rank they already carry would copy the op's attrs for nothing.
bool needsRankArgs(const Graph& graph, const Op& op, int64_t rank);

// The model value behind `v`: back through the inserted ops (forward ops, redistributions, a
// replace graph, mirrors) that sit between it and an input, parameter or model op result.
ValueId modelValueBehind(const Graph& graph, ValueId v);

}  // namespace irc
