#pragma once
// Giving an op its sharding, shared by every propagation mode: the configured one (checked, with
// a located diagnostic when invalid), the replicated and data-parallel defaults, and the one a
// neighbour's layout implies through the op's rule (Shardy's projection onto factors).
#include <optional>

#include "ir/diagnostics.h"
#include "ir/graph.h"
#include "passes/manager/compile_options.h"
#include "ops/op_rule.h"
#include "ops/op_sharding.h"

namespace irc {

// The op's configured sharding (in_strategy / in_layout, with out_strategy / out_layout), nullopt
// when it has none or it is invalid (then a diagnostic is reported at the annotation).
// `fullyUseDevices` applies MindSpore's rule to shard strategies (1 or all devices).
std::optional<OpSharding> configuredSharding(const Graph& graph, const Op& op, const OpRule& rule, const CompileOptions& options,
                                             DiagnosticEngine& diags, bool fullyUseDevices, bool& failed);

OpSharding replicatedSharding(const OpRule& rule, int64_t deviceNum);
// Dim 0 of the first input split by device_num where it divides (and may be split), else
// replicated.
OpSharding dataParallelSharding(const OpRule& rule, const OpView& op, int64_t deviceNum);

// The sharding that makes the op's tensor `operand` (or result, when `isResult`) have `layout`
// as far as the rule allows: each dim's axes go to its factors major to minor while they divide;
// axes that cannot go through (replicated factors, uneven sub-splits, broadcast dims) are
// dropped. Partial axes are dropped too. A mesh axis spanning two factors of a dim is split in
// two first (splitAxesAtFactors), so the sharding's mesh may refine the layout's.
OpSharding shardingFromNeighbour(const OpRule& rule, int tensor, bool isResult, const TensorLayout& layout);

// MindSpore's device-arrangement expansion (ReshapeInfo): where a dim's axis is larger than what
// is left of the factor it reaches and that rest divides it (tokens [B*S] split 128 ways reaching
// B = 8, S = 16k), the axis is split into that rest (major) and the remainder (minor), which goes
// on to the next factor. Names of split axes read `name(1)8`, `name(8)16` (Shardy's sub-axes).
TensorLayout splitAxesAtFactors(TensorLayout layout, const DimFactors& dims, const std::vector<int64_t>& factorSizes);

// Stores the sharding on the op (dumps derive its printed forms: ops/op_sharding.h strategyOf).
void assignSharding(Op& op, OpSharding sharding, StrategyOrigin origin);

}  // namespace irc
