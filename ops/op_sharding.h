#pragma once
// An op's sharding from its configured strategy or layout, with MindSpore's checks (spec/
// parallel-semantics.md §2), and everything derived from it: the layout of each operand as the
// op needs it, of each result as the op computes it (partial included), the forward ops that
// complete partial results, and the strategy printed back.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.h"
#include "ir/op_parallel.h"
#include "ops/op_rule.h"
#include "ops/op_defs.h"

namespace irc {

// The op as the checks see it: names for messages, shapes for divisibility.
struct OpView {
  std::string name;
  std::string type;
  const OpDef* def = nullptr;
  std::vector<std::string> operandNames;  // tensor operands
  std::vector<Shape> operandShapes;
  std::vector<Shape> resultShapes;
};
OpView viewOf(const Graph& graph, const Op& op);

struct StrategyError {
  std::string message;
  int operand = -1;  // the tensor operand at fault, if one is
};

using ShardingResult = std::variant<OpSharding, StrategyError>;

// MindSpore `.shard()`: device matrix = the factors' split counts in MindSpore's order (repeat
// appended on the right, on the left for Gather with a split vocabulary), every factor on its
// own axis. Checks: one tuple per tensor operand, lengths, divisibility, equal splits of a
// shared factor, replicated and broadcast dims unsplit, device count, op-specific rules.
ShardingResult shardingFromStrategy(const OpRule& rule, const OpView& op, const ShardStrategy& strategy, int64_t deviceNum,
                                    const std::optional<ShardStrategy>& outStrategy = std::nullopt);
// Layout form over a named mesh: per tensor operand its tensor map.
ShardingResult shardingFromLayouts(const OpRule& rule, const OpView& op, const std::vector<DimAxes>& inLayouts,
                                   const DeviceMatrix& mesh,
                                   const std::optional<std::vector<DimAxes>>& outLayouts = std::nullopt);

TensorLayout operandLayout(const OpRule& rule, const OpSharding& s, int operand, const Shape& shape);
TensorLayout resultLayout(const OpRule& rule, const OpSharding& s, int result, const Shape& shape);
// A result after its forward ops: what the op computes with its partial axes completed, all-reduced
// or reduce-scattered on dim 0 (where the sharding asks for that).
TensorLayout finalResultLayout(const OpRule& rule, const OpSharding& s, int result, const Shape& shape);
// The factor axes that make results partial (reduction factors on axes of size > 1), ascending.
std::vector<int> partialAxes(const OpRule& rule, const OpSharding& s);
// AllReduce (or ReduceScatter for a requested reduce-scattered output), RealDiv for ReduceMean.
std::vector<ForwardOp> forwardOps(const OpRule& rule, const OpSharding& s, const OpView& op);

// The shard strategy the sharding amounts to (per operand, per dim, number of slices).
ShardStrategy strategyOf(const OpRule& rule, const OpSharding& s, const OpView& op);
// The split count of each dim of a tensor made of `dims`.
IntTuple splitCounts(const DimFactors& dims, const OpSharding& s);
// Per operand its tensor map, for the layout form.
std::vector<DimAxes> layoutMapsOf(const OpRule& rule, const OpSharding& s);
// What dumps, reports and checkpoints print of an op's sharding, derived when they print it (an
// op keeps its sharding, not its text): its shard strategy, one tuple per operand; the tensor
// maps of its layout form; the user's out_strategy (null without one). The op has a sharding.
ShardStrategy strategyOf(const Op& op);
std::vector<DimAxes> layoutMapsOf(const Op& op);
const ShardStrategy* outStrategyOf(const Op& op);
// Drops axes a layout cannot express: in a dim made of several factors (a reshape's merged dim)
// a minor factor may hold axes only once every more-major factor is fully split, in every tensor
// of the op. Returns true when it changed anything.
bool enforceCompoundOrder(const OpRule& rule, OpSharding& s);

// Device count the sharding uses (the product of its factors' split counts).
int64_t devicesUsed(const OpRule& rule, const OpSharding& s);

}  // namespace irc
