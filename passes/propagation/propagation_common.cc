#include "passes/propagation/propagation_common.h"
#include "ops/op_defs.h"
#include "plan/plan_queries.h"
#include "passes/propagation/sharding_assignment.h"

#include <functional>

namespace irc {

IntKey candidateKeyOf(const OpRule& rule, const OpView& view) {
  IntKey key;
  key.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(view.def)));
  appendList(key, rule.factorSizes);
  appendList(key, rule.factorKinds);
  appendList(key, rule.mindsporeOrder);
  key.push_back(static_cast<int64_t>(rule.reduceOp));
  for (const auto* tensors : {&rule.operands, &rule.results}) {
    key.push_back(static_cast<int64_t>(tensors->size()));
    for (const DimFactors& dims : *tensors) {
      key.push_back(static_cast<int64_t>(dims.size()));
      for (const auto& factors : dims) appendList(key, factors);
    }
  }
  for (const auto* shapes : {&view.operandShapes, &view.resultShapes}) {
    key.push_back(static_cast<int64_t>(shapes->size()));
    for (const Shape& shape : *shapes) appendList(key, shape);
  }
  return key;
}

PropagationInput preparePropagation(Graph& graph, PassContext& context, const CompileOptions& options, bool fullyUseDevices) {
  PropagationInput in;
  in.options = options;
  in.rules.resize(graph.ops.size());
  in.views.resize(graph.ops.size());
  RuleCache rules;
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    op.parallel = OpParallelState{};
    // A result's layout is this propagation's decision (a conversion after its op) or layout
    // inference's answer, never an earlier compile's.
    for (ValueId r : op.results) graph.value(r).layout = std::nullopt;
    op.parallel->rule = rules.ruleOf(graph, op);
    in.rules[id] = op.parallel->rule ? &*op.parallel->rule : nullptr;
    in.views[id] = viewOf(graph, op);
    if (!in.rules[id]) continue;
    // MindSpore ignores a strategy configured on Cast: it follows its neighbours (spec §5.2).
    if (ignoresConfiguredStrategy(defOf(op))) continue;
    bool failed = false;
    if (auto s = configuredSharding(graph, op, *in.rules[id], options, context.diags, fullyUseDevices, failed)) {
      StrategyOrigin origin;
      origin.kind = OriginKind::User;
      assignSharding(op, *s, origin);
    }
    in.failed |= failed;
  }
  return in;
}

TensorLayout layoutOfSharding(const TensorSharding& sharding, const DeviceMatrix& mesh, const Shape& shape) {
  return TensorLayout{mesh, shape, sharding.dims, sharding.partialAxes, sharding.partialOp};
}

std::optional<TensorLayout> producedLayout(const Graph& graph, const PropagationInput& in, ValueId value) {
  const Value& v = graph.value(value);
  if (v.producer == kNoId) {
    if (v.sharding && in.options.mesh) return layoutOfSharding(*v.sharding, *in.options.mesh, v.type.shape);
    return std::nullopt;
  }
  const Op& op = graph.op(v.producer);
  const auto& constraints = op.annotation->outputSharding;
  if (v.resultIndex < static_cast<int>(constraints.size()) && constraints[v.resultIndex] && in.options.mesh)
    return layoutOfSharding(*constraints[v.resultIndex], *in.options.mesh, v.type.shape);
  if (!op.parallel->hasSharding || !in.rules[v.producer]) return std::nullopt;
  return finalResultLayout(*in.rules[v.producer], op.parallel->sharding, v.resultIndex, v.type.shape);
}

void finishPropagation(Graph& graph, const PropagationInput& in,
                       const std::function<OpSharding(OpId, const OpRule&, const OpView&)>& fallback) {
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    if (op.parallel->hasSharding || !in.rules[id]) continue;
    const OpRule& rule = *in.rules[id];
    StrategyOrigin origin;
    origin.kind = OriginKind::Default;
    if (takesLayoutsFromNeighbours(op)) {
      ValueId input = op.operands[0].value;
      if (auto layout = producedLayout(graph, in, input)) {
        origin.kind = OriginKind::Propagated;
        origin.fromValue = input;
        origin.edge = StrategyOrigin::Edge::FromProducer;
        assignSharding(op, shardingFromNeighbour(rule, 0, false, *layout), origin);
        continue;
      }
      assignSharding(op, replicatedSharding(rule, in.options.deviceNum), origin);
      continue;
    }
    assignSharding(op, fallback(id, rule, in.views[id]), origin);
  }
}

namespace {

// Values computed from the graph inputs, and values computed from trained weights alone.
struct ValueOrigins {
  std::vector<bool> batched, weight;
};

ValueOrigins valueOrigins(const Graph& graph) {
  ValueOrigins o{std::vector<bool>(graph.values.size(), false), std::vector<bool>(graph.values.size(), false)};
  for (ValueId v : graph.inputs) o.batched[v] = true;
  for (ValueId v : graph.parameters) o.weight[v] = graph.value(v).trainable;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    bool batched = false, weights = false, other = false;
    for (const Operand& operand : op.operands) {
      if (!operand.isValue()) continue;
      batched = batched || o.batched[operand.value];
      if (o.weight[operand.value]) weights = true;
      else other = true;
    }
    for (ValueId r : op.results) {
      o.batched[r] = batched;
      o.weight[r] = weights && !other;
    }
  }
  return o;
}

// The sharding an op gets from the first operand that `follow` accepts and whose produced
// layout splits something that passes through the op's rule; nullopt if none does.
std::optional<OpSharding> fromProducers(const Graph& graph, const PropagationInput& in, const Op& op, const OpRule& rule,
                                        const std::function<bool(ValueId)>& follow) {
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Operand& o = op.operands[i];
    if (!o.isValue() || !follow(o.value)) continue;
    std::optional<TensorLayout> layout = producedLayout(graph, in, o.value);
    if (!layout || layout->usedAxes().empty()) continue;
    OpSharding s = shardingFromNeighbour(rule, tensorOperandIndex(op, i), false, *layout);
    if (std::any_of(s.factorAxes.begin(), s.factorAxes.end(), [](const std::vector<int>& axes) { return !axes.empty(); }))
      return s;
  }
  return std::nullopt;
}

}  // namespace

void runDataParallel(Graph& graph, const PropagationInput& in) {
  const int64_t devices = in.options.deviceNum;
  ValueOrigins origins = valueOrigins(graph);
  finishPropagation(graph, in, [&](OpId id, const OpRule& rule, const OpView& view) {
    const Op& op = graph.op(id);
    bool weightsOnly = !op.results.empty() && origins.weight[op.results[0]];
    if (weightsOnly) return replicatedSharding(rule, devices);
    // A configured op's layout is the user's plan, not the batch split: after it the batch
    // is dim 0 again (docs/model-format.md's data_parallel).
    auto follow = [&](ValueId v) {
      OpId producer = graph.value(v).producer;
      return origins.batched[v] && !(producer != kNoId && std::as_const(graph.op(producer)).annotation->configured());
    };
    if (auto s = fromProducers(graph, in, op, rule, follow)) return *s;
    return dataParallelSharding(rule, view, devices);
  });
}

void runForwardFill(Graph& graph, const PropagationInput& in) {
  const int64_t devices = in.options.deviceNum;
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    if (!in.rules[id] || op.inserted()) continue;
    const OpAnnotation& ann = *std::as_const(op).annotation;
    if (ann.configured() || ann.inStyledModule || op.parallel->origin.kind == OriginKind::User) continue;
    StrategyOrigin origin;
    origin.kind = OriginKind::Default;
    OpSharding s = fromProducers(graph, in, op, *in.rules[id], [](ValueId) {
                     return true;
                   }).value_or(replicatedSharding(*in.rules[id], devices));
    assignSharding(op, std::move(s), origin);
    // The new sharding holds no result apart: a layout a conversion decided before is gone too.
    for (ValueId r : op.results) graph.value(r).layout = std::nullopt;
  }
}

void reshapeLayoutsFromConsumers(Graph& graph, const PropagationInput& in, ReshapeOutput unconsumed) {
  auto uses = computeUses(graph);
  std::vector<char> isOutput(graph.values.size(), 0);
  for (ValueId v : graph.outputs) isOutput[v] = 1;
  for (auto it = graph.order.rbegin(); it != graph.order.rend(); ++it) {
    Op& op = graph.op(*it);
    if (!takesLayoutsFromNeighbours(op) || !in.rules[*it] || std::as_const(op).annotation->configured()) continue;
    ValueId out = op.results[0];
    const Use* first = nullptr;
    for (const Use& u : uses[out])
      if (in.rules[u.op] && graph.op(u.op).parallel->hasSharding) {
        first = &u;
        break;
      }
    const OpRule& rule = *in.rules[*it];
    std::optional<TensorLayout> need;
    if (first) {
      const Op& consumer = graph.op(first->op);
      int k = 0;
      for (int i = 0; i < first->operandIndex; ++i) k += consumer.operands[i].isValue() ? 1 : 0;
      need = operandLayout(*in.rules[first->op], consumer.parallel->sharding, k, graph.value(out).type.shape);
    } else if (unconsumed == ReshapeOutput::Replicated && isOutput[out] && uses[out].empty()) {
      // MindSpore's ReshapeInfo with no next op: its output layout stays the default, replicated
      // ([32, 512, 7, 7] -> [32, 25088] under (4, 1, 1, 1) on 32 devices leaves [32, 25088] a rank).
      need = TensorLayout::replicated(resultLayout(rule, op.parallel->sharding, 0, graph.value(out).type.shape).mesh,
                                      graph.value(out).type.shape);
    }
    if (!need) continue;
    // MindSpore's ReshapeInfo: the input layout is the producer's (as far as it passes through
    // the reshape's factors), the output the consumer's; what differs is the Reshape's own
    // conversion after it, not a gather before it.
    OpSharding s = shardingFromNeighbour(rule, 0, true, *need);
    if (std::optional<TensorLayout> given = producedLayout(graph, in, op.operands[0].value)) {
      OpSharding fromProducer = shardingFromNeighbour(rule, 0, false, *given);
      if (operandLayout(rule, fromProducer, 0, graph.value(op.operands[0].value).type.shape).sameAs(*given)) s = fromProducer;
    }
    TensorLayout produced = resultLayout(rule, s, 0, graph.value(out).type.shape);
    s.conversions.assign(rule.results.size(), OpSharding::Conversion::None);
    if (!produced.sameAs(*need)) {
      s.conversions[0] = OpSharding::Conversion::ReshapeConsumer;
      graph.value(out).layout = std::move(*need);
    }
    StrategyOrigin origin = op.parallel->origin;
    if (first) {
      origin.kind = OriginKind::Propagated;
      origin.fromOp = first->op;
      origin.fromValue = kNoId;
      origin.edge = StrategyOrigin::Edge::FromConsumer;
    }
    assignSharding(op, s, origin);
  }
}

}  // namespace irc
