#pragma once
// What the parallel passes decide about an op, stored on the op so that dumps and reports read
// it: its sharding (device matrix + device axes per factor of its rule), where that came from,
// and after layout inference the layouts of its inputs and outputs and its forward ops.
#include <optional>
#include <string>
#include <vector>

#include "ir/factor_rule.h"
#include "ir/heap_optional.h"
#include "ir/redist_step.h"
#include "ir/sharding.h"
#include "ir/tensor_layout.h"

namespace irc {

struct OpSharding {
  DeviceMatrix mesh;
  std::vector<std::vector<int>> factorAxes;  // per factor of the op's rule, device axes major first
  bool layoutForm = false;                   // from in_layout / a named mesh: printed {in_layout: ...}
  // Per result, whether its partial sum is reduce-scattered on dim 0 instead of all-reduced
  // (MindSpore's out_strategy on a MatMul, an out_layout asking for it): a choice of the forward
  // ops; the layout it yields is derived (ops/op_sharding.h finalResultLayout).
  std::vector<bool> reduceScattered;
  // Per result, why it is held in another layout than the op computes and converted right after
  // the op (its forward ops): factor propagation's fixed point, or what a Reshape's consumer
  // needs (MindSpore's ReshapeInfo redistributes at the Reshape). The layout it is held in is the
  // result value's own (Value::layout), which propagation writes together with this.
  enum class Conversion { None, FactorFixedPoint, ReshapeConsumer };
  std::vector<Conversion> conversions;
  Conversion conversionOf(size_t result) const { return result < conversions.size() ? conversions[result] : Conversion::None; }
  bool scatters(size_t result) const { return result < reduceScattered.size() && reduceScattered[result]; }
  bool operator==(const OpSharding&) const = default;
};

enum class OriginKind { User, Propagated, Default, Tensor, Searched };

// Where an op's sharding came from, as ids and typed strategies; dumps/origin_text.h words it.
struct StrategyOrigin {
  OriginKind kind = OriginKind::Default;
  // The neighbour it came from: an op, or a value (an annotated input or parameter, a
  // constrained output, the value a Reshape took its layout from). Neither: factor
  // propagation's fixed point (`fixedPoint`), or a configured or default sharding.
  int32_t fromOp = -1;     // an OpId
  int32_t fromValue = -1;  // a ValueId
  bool fixedPoint = false;
  // A configured plain strategy laid on the mesh this tensor operand arrives in instead of
  // MindSpore's dim order (passes/propagation/mesh_alignment.h); -1 when in MindSpore's order.
  int32_t meshOfOperand = -1;
  // The edge it travelled, seen from the op: from its producer (`from -> op`), from its
  // consumer (`op -> from`), or its own output constraint (`op -> its output sharding`).
  enum class Edge { None, FromProducer, FromConsumer, OutputConstraint };
  Edge edge = Edge::None;
  double cost = 0;
  ShardStrategy nextBest;  // the best losing alternative (formatted by dumps/ only)
  double nextBestCost = 0;
  bool hasNextBest = false;
  // Sharding propagation: the first of MindSpore's criteria (spec §5.5) on which the
  // alternative lost, and both candidates' figures there (bytes, or partitions).
  enum class LostOn { Unknown, EdgeCommunication, EdgeComputation, ForwardCommunication, Partitions, Order };
  LostOn lostOn = LostOn::Unknown;
  double lostOnBest = 0, lostOnNextBest = 0;
};

// A forward op: communication right after the op that completes its output, as a redistribution
// step (an AllReduce or ReduceScatter over the axes its result is partial on, a RealDiv after a
// mean's AllReduce): the op's sharding fixes the step's kind, mesh, axes, reduction and divisor;
// the redistribution pass adds the local shapes when it emits it.
struct ForwardOp {
  RedistStep step;
  std::string reason;
  bool operator==(const ForwardOp&) const = default;
};

struct OpParallelState {
  // The op's factor rule, computed once by strategy propagation and read by the later passes.
  HeapOptional<OpRule> rule;
  OpSharding sharding;
  StrategyOrigin origin;
  bool hasSharding = false;
  // What dumps print of it (a shard strategy, tensor maps in layout form, the user's
  // out_strategy) is derived from the sharding when printed: ops/op_sharding.h strategyOf(op).
  // Filled by layout inference.
  bool layoutsInferred = false;
  std::vector<TensorLayout> inputLayouts;   // per tensor operand, as the op needs it
  std::vector<TensorLayout> outputLayouts;  // per result, as the op computes it (partial included)
  // What consumers see of each result (after forward ops and any constraint) is the result
  // value's own layout (Value::layout), the one home of every model value's layout.
  // Per result, the layout after the reducing forward ops where a conversion follows (an output
  // `sharding` constraint, a result propagation holds apart): the conversion, to the value's
  // layout, is part of the op's forward ops.
  std::vector<std::optional<TensorLayout>> beforeConversion;
  std::vector<ForwardOp> forwardOps;
};

}  // namespace irc
