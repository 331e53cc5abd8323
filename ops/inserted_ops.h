#pragma once
// Building the ops the passes insert (forward ops, redistribution steps) and giving them a
// rank's arguments: groups with MindSpore's names, StridedSlice bounds.
#include <optional>
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
// `Shapes`: what the rank's shapes need (a slice's bounds, a group's size), its groups' names and
// ranks left empty — the memory estimate's and the verifier's view, which never read them.
enum class RankDetail { Everything, Shapes };
RankArgs rankArgs(const Op& op, int64_t rank, RankDetail detail = RankDetail::Everything);
// One rank's view of an op. The global graph's inserted ops carry no rank's arguments: the view
// derives the rank's groups, bounds and offsets for the ops that have them (rankArgs); any other
// op, and every op of a rank's local graph (shape slicing gave it its rank's arguments with
// materializeForRank), it shows as it is. The printer, the report, explain, DOT and the verifier
// read ops through it.
class OpForRank {
 public:
  OpForRank(const Graph& graph, const Op& op, int64_t rank, RankDetail detail = RankDetail::Everything);
  const Op& op() const { return op_; }
  const AttrMap& attrs() const { return args_ ? args_->attrs : op_.attrs; }
  const std::vector<Operand>& operands() const { return args_ ? args_->operands : op_.operands; }

 private:
  const Op& op_;
  std::optional<RankArgs> args_;
};

// The model value behind `v`: back through the inserted ops (forward ops, redistributions, a
// replace graph, mirrors) that sit between it and an input, parameter or model op result.
ValueId modelValueBehind(const Graph& graph, ValueId v);

}  // namespace irc
