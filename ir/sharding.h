#pragma once
// What the model says about parallelism, in typed form: an op's configured strategy or layout,
// and a tensor's `sharding` annotation (any of the four notations, resolved onto the model's
// named mesh). Device axes are indices into the device matrix counted from the LEFT; the
// MindSpore "from the right" integer form exists only at the text edges.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/diagnostics.h"
#include "ir/heap_optional.h"

namespace irc {

enum class ReduceOp { Sum, Max, Min, Prod };
std::string_view reduceOpName(ReduceOp op);  // "sum"
std::optional<ReduceOp> parseReduceOp(std::string_view name);

// Per tensor dim, the device axes splitting it, major first (empty = not split).
using DimAxes = std::vector<std::vector<int>>;

// Which notation a sharding was written in; the dump prints layouts in that spirit.
enum class ShardingNotation { Layout, Sbp, Placements, DimsMapping };

struct TensorSharding {
  DimAxes dims;
  std::vector<int> partialAxes;  // ascending
  ReduceOp partialOp = ReduceOp::Sum;
  int64_t priority = 0;    // 0 is highest, as in Shardy
  std::vector<bool> open;  // per dim: may propagation add axes (default: closed)
  std::vector<int> replicatedAxes;
  ShardingNotation notation = ShardingNotation::Layout;
  SourceLoc loc;
  bool operator==(const TensorSharding&) const = default;
};

// MindSpore shard strategy: per tensor input, the number of slices of each dim.
using ShardStrategy = std::vector<IntTuple>;

// What the model configured on an op. `in_strategy` and `in_layout` exclude each other.
struct OpAnnotation {
  // On the heap: most ops configure none of these (ir/heap_optional.h).
  HeapOptional<ShardStrategy> inStrategy;
  HeapOptional<ShardStrategy> outStrategy;
  HeapOptional<std::vector<DimAxes>> inLayout;
  HeapOptional<std::vector<DimAxes>> outLayout;
  std::optional<int64_t> priority;
  // A strategy checkpoint's strategy for the op (frontends/mindspore/strategy_checkpoint.h): strategy
  // propagation makes it the op's configured strategy where the op would otherwise get another.
  HeapOptional<ShardStrategy> checkpointStrategy;
  // One entry per op output; nullopt = no constraint on that output.
  std::vector<std::optional<TensorSharding>> outputSharding;
  SourceLoc inStrategyLoc, outStrategyLoc, inLayoutLoc, outLayoutLoc, priorityLoc;
  // Activation checkpointing (MindSpore's `recompute`, torch's checkpoint): a training step
  // keeps none of what the op's backward reads, and runs its forward again before its backward.
  bool recompute = false;
  // Which checkpoint it belongs to (torch's one checkpoint() call): a checkpoint keeps what it
  // reads from outside itself, so each layer checkpointed alone keeps its own input. 0: the one
  // checkpoint of every op marked `recompute: true` on its own.
  int32_t checkpoint = 0;

  // In a module a plan's `modules:` styles: the ops the style leaves unconfigured are the
  // propagation's (a norm's weight multiply), not DTensor's plain-tensor rule.
  bool inStyledModule = false;

  bool configured() const { return inStrategy.has_value() || inLayout.has_value(); }
};

}  // namespace irc
