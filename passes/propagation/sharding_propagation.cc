// MindSpore's sharding propagation (MindSpore's design document, spec §5): candidates for every unconfigured op,
// redistribution costs on edges, BFS from the configured ops and fixed layouts choosing for each
// reached neighbour the candidate that is cheapest on the edge it was reached by. Where configured
// ops were laid on their operands' meshes (mesh_alignment.h), the neighbours of such ops may take
// their layouts over exactly and conversions move up Reshape chains (docs/deviations.md).
#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "ops/int_key.h"
#include "plan/plan_queries.h"
#include "ops/collective.h"
#include "plan/redistribution_planner.h"
#include "passes/propagation/mesh_alignment.h"
#include "passes/propagation/sharding_assignment.h"
#include "passes/propagation/sharding_propagation.h"
#include "passes/propagation/strategy_candidates.h"
#include "ops/op_defs.h"

namespace irc {
namespace {

// An edge's cache key: both layouts in standard form and the dtype size (ops/int_key.h).
using EdgeKey = IntKey;

struct Scored {
  const OpSharding* sharding;
  RedistCost edge;
  double forwardComm;
  int64_t partitions;
  ShardStrategy strategy;
};

// §5.5's criteria, in order: the edge's communication (none first, then the smallest; costs are
// never negative), the edge's computation, the op's own forward communication, the larger
// partition number, the lexicographically larger strategy. One list serves the choice (`better`)
// and explain's account of it (`setLostOn`).
using Criterion = StrategyOrigin::LostOn;
constexpr Criterion kCriteria[] = {Criterion::EdgeCommunication, Criterion::EdgeComputation, Criterion::ForwardCommunication,
                                   Criterion::Partitions};

double figureOn(Criterion c, const Scored& s) {
  switch (c) {
    case Criterion::EdgeCommunication: return s.edge.comm;
    case Criterion::EdgeComputation: return s.edge.compute;
    case Criterion::ForwardCommunication: return s.forwardComm;
    case Criterion::Partitions: return static_cast<double>(s.partitions);
    case Criterion::Unknown:
    case Criterion::Order: return 0;
  }
  return 0;
}

Criterion firstDifference(const Scored& a, const Scored& b) {
  for (Criterion c : kCriteria)
    if (figureOn(c, a) != figureOn(c, b)) return c;
  return Criterion::Order;
}

bool better(const Scored& a, const Scored& b) {
  Criterion c = firstDifference(a, b);
  if (c == Criterion::Order) return a.strategy > b.strategy;
  return c == Criterion::Partitions ? figureOn(c, a) > figureOn(c, b) : figureOn(c, a) < figureOn(c, b);
}

// The criterion on which `next` lost to `best` and both figures there, for explain.
void setLostOn(auto& d, const Scored& best, const Scored& next) {
  d.lostOn = firstDifference(best, next);
  d.lostOnBest = figureOn(d.lostOn, best);
  d.lostOnNextBest = figureOn(d.lostOn, next);
}

class ShardingPropagation {
 public:
  ShardingPropagation(Graph& g, const PropagationInput& in, const std::vector<OpId>& relaid)
      : graph_(g), in_(in), uses_(computeUses(g)) {
    visited_.assign(g.ops.size(), false);
    onAlignedMesh_.assign(g.ops.size(), false);
    for (OpId id : relaid) onAlignedMesh_[id] = true;
    anyRelaid_ = !relaid.empty();
  }

  void run() {
    std::deque<OpId> queue;
    // Fixed layouts first: annotated inputs and parameters (they come first in a model).
    for (const auto* list : {&graph_.inputs, &graph_.parameters})
      for (ValueId v : *list)
        if (auto layout = producedLayout(graph_, in_, v)) reachConsumers(v, *layout, queue, OriginKind::Tensor);
    // Configured ops in model order (irc rule; MindSpore orders by internal name).
    std::vector<OpId> roots;
    for (OpId id : graph_.order)
      if (graph_.op(id).parallel->hasSharding) roots.push_back(id);
    std::sort(roots.begin(), roots.end(), [&](OpId a, OpId b) { return graph_.op(a).modelIndex < graph_.op(b).modelIndex; });
    for (OpId id : roots) {
      visited_[id] = true;
      queue.push_back(id);
    }
    // Output `sharding` constraints are fixed values too: the producing op is chosen by the cost
    // of producing that layout (§5.0); its consumers see the constraint through producedLayout.
    for (OpId id : graph_.order) {
      const Op& op = graph_.op(id);
      for (size_t r = 0; r < op.annotation->outputSharding.size(); ++r) {
        if (!op.annotation->outputSharding[r] || visited_[id]) continue;
        if (auto layout = producedLayout(graph_, in_, op.results[r])) {
          chooseProducer(id, static_cast<int>(r), *layout, Source::ofValue(op.results[r]), queue, OriginKind::Tensor);
          graph_.op(id).parallel->origin.edge = StrategyOrigin::Edge::OutputConstraint;
        }
      }
    }
    while (!queue.empty()) {
      OpId id = queue.front();
      queue.pop_front();
      const Op& op = graph_.op(id);
      for (ValueId r : op.results)  // successors first
        if (auto layout = producedLayout(graph_, in_, r)) reachConsumers(r, *layout, queue);
      for (size_t i = 0; i < op.operands.size(); ++i) {  // then predecessors
        if (!op.operands[i].isValue()) continue;
        const Value& v = graph_.value(op.operands[i].value);
        if (v.producer == kNoId || visited_[v.producer]) continue;
        const TensorLayout& need =
            op.parallel->hasSharding
                ? operandLayout(*in_.rules[id], op.parallel->sharding, tensorOperandIndex(op, i), v.type.shape)
                : TensorLayout::replicated(DeviceMatrix::unnamed({in_.options.deviceNum}), v.type.shape);
        chooseProducer(v.producer, v.resultIndex, need, Source::ofOp(id), queue);
      }
    }
    if (std::find(onAlignedMesh_.begin(), onAlignedMesh_.end(), true) != onAlignedMesh_.end()) moveConversionsUpstream();
  }

 private:
  // The neighbour a strategy comes from (an op, or a fixed value).
  struct Source {
    OpId op = kNoId;
    ValueId value = kNoId;
    static Source ofOp(OpId id) { return {id, kNoId}; }
    static Source ofValue(ValueId id) { return {kNoId, id}; }
  };

  static StrategyOrigin originFrom(OriginKind kind, Source from, StrategyOrigin::Edge edge) {
    StrategyOrigin origin;
    origin.kind = kind;
    origin.fromOp = from.op;
    origin.fromValue = from.value;
    origin.edge = edge;
    return origin;
  }

  // The consumers of `value` choose by its layout: from the value itself where it is fixed (an
  // annotated input, a constrained output), else from the op that produced it.
  void reachConsumers(ValueId value, const TensorLayout& layout, std::deque<OpId>& queue,
                      OriginKind kind = OriginKind::Propagated) {
    // A constrained op output is a fixed value as well: its consumers are decided by it.
    const Value& v = graph_.value(value);
    if (v.producer != kNoId) {
      const auto& c = std::as_const(graph_).op(v.producer).annotation->outputSharding;
      if (v.resultIndex < static_cast<int>(c.size()) && c[v.resultIndex]) {
        kind = OriginKind::Tensor;
      }
    }
    Source from = kind == OriginKind::Tensor ? Source::ofValue(value) : Source::ofOp(v.producer);
    for (const Use& use : uses_[value]) {
      if (visited_[use.op]) continue;
      chooseConsumer(use.op, tensorOperandIndex(graph_.op(use.op), use.operandIndex), layout, from, queue, kind);
    }
  }

  const std::vector<OpSharding>& candidates(OpId id) {
    const OpRule& rule = *in_.rules[id];
    const OpView& view = in_.views[id];
    EdgeKey key = candidateKeyOf(rule, view);
    auto it = candidateCache_.find(key);
    if (it == candidateCache_.end())
      it = candidateCache_.emplace(key, candidateShardings(rule, view, in_.options.deviceNum, in_.options.fullyUseDevices)).first;
    return it->second;
  }

  RedistCost edgeCost(const TensorLayout& from, const TensorLayout& to, DType dtype) {
    EdgeKey key;
    appendLayoutKey(key, from);
    appendLayoutKey(key, to);
    key.push_back(byteSize(dtype));
    auto it = planCache_.find(key);
    if (it != planCache_.end()) return it->second;
    PlannerOptions options{in_.options.enableAlltoall, byteSize(dtype)};
    RedistCost c = planRedistribution(from, to, options).cost;
    planCache_.emplace(key, c);
    return c;
  }

  double forwardComm(const OpRule& rule, const OpSharding& s, const OpView& view, DType dtype) {
    std::vector<int> axes = partialAxes(rule, s);
    if (axes.empty() || view.resultShapes.empty()) return 0;
    RedistStep step = completionStep(s.mesh, axes, resultLayout(rule, s, 0, view.resultShapes[0]).sliceShape());
    return correctComm(stepCost(step, byteSize(dtype)).comm);
  }

  Scored score(OpId id, const OpSharding& s, RedistCost edge) {
    const OpRule& rule = *in_.rules[id];
    const OpView& view = in_.views[id];
    ShardStrategy strategy = strategyOf(rule, s, view);
    int64_t partitions = 1;
    for (const auto& t : strategy)
      for (int64_t x : t) partitions *= x;
    DType dtype = graph_.value(graph_.op(id).results[0]).type.dtype;
    return {&s, edge, forwardComm(rule, s, view, dtype), partitions, strategy};
  }

  // What `choose` decided for an op: the winning candidate and the runner-up.
  struct Decision {
    const OpSharding* best = nullptr;  // into candidateCache_ or exactShardings_ (stable)
    bool bestIsExact = false;          // the neighbour's layout taken over exactly
    double bestCost = 0;
    bool hasNextBest = false;
    ShardStrategy nextBest;
    double nextBestCost = 0;
    StrategyOrigin::LostOn lostOn = StrategyOrigin::LostOn::Unknown;
    double lostOnBest = 0, lostOnNextBest = 0;
  };

  // Picks the best candidate by `costOf` and records where it came from. The decision depends
  // only on the op's rule, shapes and dtype and on the edge (`edgeKey`: direction, index, the
  // neighbour's layout and dtype), so ops that repeat (every layer's) reuse it.
  template <typename CostFn>
  void choose(OpId id, Source from, StrategyOrigin::Edge edge, const EdgeKey& edgeKey, CostFn costOf,
              const std::optional<OpSharding>& exact, std::deque<OpId>& queue, OriginKind kind = OriginKind::Propagated) {
    Op& op = graph_.op(id);
    const OpRule& rule = *in_.rules[id];
    visited_[id] = true;
    queue.push_back(id);
    StrategyOrigin origin = originFrom(kind, from, edge);
    if (takesLayoutsFromNeighbours(op)) return;  // takes its layouts through (finishPropagation / below)
    EdgeKey key = candidateKeyOf(rule, in_.views[id]);
    key.push_back(byteSize(graph_.value(op.results[0]).type.dtype));
    key.push_back(exact ? 1 : 0);
    key.insert(key.end(), edgeKey.begin(), edgeKey.end());
    auto cached = decisionCache_.find(key);
    if (cached == decisionCache_.end()) cached = decisionCache_.emplace(std::move(key), decide(id, costOf, exact)).first;
    const Decision& d = cached->second;
    if (!d.best) {
      assignSharding(op, replicatedSharding(rule, in_.options.deviceNum), origin);
      return;
    }
    origin.cost = d.bestCost;
    origin.hasNextBest = d.hasNextBest;
    origin.nextBest = d.nextBest;
    origin.nextBestCost = d.nextBestCost;
    origin.lostOn = d.lostOn;
    origin.lostOnBest = d.lostOnBest;
    origin.lostOnNextBest = d.lostOnNextBest;
    onAlignedMesh_[id] = d.bestIsExact;
    assignSharding(op, *d.best, origin);
  }

  template <typename CostFn>
  Decision decide(OpId id, CostFn costOf, const std::optional<OpSharding>& exact) {
    std::vector<Scored> scored;
    for (const OpSharding& s : candidates(id)) scored.push_back(score(id, s, costOf(s)));
    // The neighbour's layout itself, on its own mesh, where no candidate takes it over for free
    // (offered only next to a re-laid mesh, for a layout out of dim order: exactSharding).
    auto isFree = [](const Scored& x) { return x.edge.comm == 0 && x.edge.compute == 0; };
    if (exact && std::none_of(scored.begin(), scored.end(), isFree)) {
      exactShardings_.push_back(*exact);
      scored.push_back(score(id, exactShardings_.back(), costOf(exactShardings_.back())));
    }
    Decision d;
    if (scored.empty()) return d;
    std::stable_sort(scored.begin(), scored.end(), better);
    d.best = scored[0].sharding;
    d.bestIsExact = !exactShardings_.empty() && d.best == &exactShardings_.back();
    d.bestCost = scored[0].edge.comm;
    if (scored.size() > 1) {
      d.hasNextBest = true;
      d.nextBest = scored[1].strategy;
      d.nextBestCost = scored[1].edge.comm;
      setLostOn(d, scored[0], scored[1]);
    }
    return d;
  }

  // The edge part of a decision's key: which side the layout comes from, at which index, in which
  // dtype, and the layout itself.
  static EdgeKey edgeContext(int direction, int index, DType dtype, const TensorLayout& layout) {
    EdgeKey key{direction, index, byteSize(dtype)};
    appendLayoutKey(key, layout);
    return key;
  }

  // The breadth-first walk decides an op by the edge it reaches it over: the keys of grouped-query
  // attention, reached from their projection, keep the projection's sequence split through the
  // broadcast to every query head, and the gather the product on a re-laid mesh needs lands
  // after the broadcast, on a tensor heads/kv-heads times larger; a rotary embedding's input,
  // reached from the projection too, is converted for each of its readers. Where an op's
  // consumers on re-laid meshes (or that took such a layout over; through Reshapes) need one
  // layout, the op takes it over exactly when that costs no more on all its edges, operands' and
  // consumers'. Ops are visited consumers first, so a conversion moves up a chain to where it is
  // cheapest, the producer's side on a tie.
  void moveConversionsUpstream() {
    for (auto it = graph_.order.rbegin(); it != graph_.order.rend(); ++it) {
      OpId id = *it;
      Op& op = graph_.op(id);
      if (!in_.rules[id] || !op.parallel->hasSharding || onAlignedMesh_[id] || takesLayoutsFromNeighbours(op) ||
          std::as_const(op).annotation->configured() || op.results.size() != 1)
        continue;
      std::optional<TensorLayout> need = alignedConsumersNeed(op.results[0]);
      if (!need) continue;
      const OpRule& rule = *in_.rules[id];
      const OpView& view = in_.views[id];
      std::optional<OpSharding> exact = exactSharding(rule, 0, true, *need, view.resultShapes[0]);
      if (!exact) continue;
      RedistCost before = edgesCost(op, op.parallel->sharding), moved = edgesCost(op, *exact);
      if (std::make_pair(moved.comm, moved.compute) > std::make_pair(before.comm, before.compute)) continue;
      StrategyOrigin origin = op.parallel->origin;
      origin.cost = moved.comm;
      origin.hasNextBest = false;
      assignSharding(op, *exact, origin);
      onAlignedMesh_[id] = true;
    }
  }

  // The redistribution cost of every edge of `op` under sharding `s`: from each operand's
  // producer, and to each consumer's need (a Reshape's: its result's consumers' need taken back
  // through it, where that is known).
  RedistCost edgesCost(const Op& op, const OpSharding& s) {
    const OpRule& rule = *op.parallel->rule;
    DType dtype = graph_.value(op.results[0]).type.dtype;
    RedistCost total;
    auto add = [&](const TensorLayout& from, const TensorLayout& to) {
      RedistCost c = edgeCost(from, to, dtype);
      total.comm += c.comm;
      total.compute += c.compute;
    };
    int tensor = 0;
    for (const Operand& o : op.operands) {
      if (!o.isValue()) continue;
      int k = tensor++;
      if (auto given = producedLayout(graph_, in_, o.value))
        add(*given, operandLayout(rule, s, k, graph_.value(o.value).type.shape));
    }
    ValueId result = op.results[0];
    TensorLayout produced = finalResultLayout(rule, s, 0, graph_.value(result).type.shape);
    for (const Use& use : uses_[result])
      if (auto need = needOf(use, result)) add(produced, *need);
    return total;
  }

  // What one consumer needs of `value`: its operand's layout, or for a Reshape the need of its
  // result's consumers on re-laid meshes taken back through it; nullopt where unknown.
  std::optional<TensorLayout> needOf(const Use& use, ValueId value, int depth = 0) const {
    const Op& consumer = graph_.op(use.op);
    if (!in_.rules[use.op] || !consumer.parallel->hasSharding) return std::nullopt;
    const OpRule& rule = *in_.rules[use.op];
    const Shape& shape = graph_.value(value).type.shape;
    if (!takesLayoutsFromNeighbours(consumer))
      return operandLayout(rule, consumer.parallel->sharding, tensorOperandIndex(consumer, use.operandIndex), shape);
    std::optional<TensorLayout> after = alignedConsumersNeed(consumer.results[0], depth + 1);
    if (!after) return std::nullopt;
    OpSharding s = shardingFromNeighbour(rule, 0, true, *after);
    if (!resultLayout(rule, s, 0, graph_.value(consumer.results[0]).type.shape).sameAs(*after)) return std::nullopt;
    return operandLayout(rule, s, 0, shape);
  }

  // The one layout `value`'s consumers on re-laid meshes (directly or through Reshapes) need;
  // nullopt when none of them is, or they need different layouts, or Reshapes nest past 8.
  std::optional<TensorLayout> alignedConsumersNeed(ValueId value, int depth = 0) const {
    if (depth >= 8) return std::nullopt;
    std::optional<TensorLayout> agreed;
    for (const Use& use : uses_[value]) {
      const Op& consumer = graph_.op(use.op);
      if (!takesLayoutsFromNeighbours(consumer) && !onAlignedMesh_[use.op]) continue;
      std::optional<TensorLayout> need = needOf(use, value, depth);
      if (!need) continue;
      if (agreed && !agreed->sameAs(*need)) return std::nullopt;
      agreed = std::move(need);
    }
    return agreed;
  }

  // A candidate's device matrix follows the op's dims in order (MindSpore's), so the layout of a
  // configured op laid on its operand's mesh (passes/propagation/mesh_alignment.h), where it is
  // out of dim order, is met by no candidate without a redistribution. Next to such an op (or
  // one that took its layout over), the sharding that takes the layout over exactly competes
  // too, as Shardy's propagation keeps a neighbour's axes. Everywhere else the candidates stand
  // alone, as in MindSpore, whose transposes leave layouts out of dim order as well.
  std::optional<OpSharding> exactSharding(Source from, const OpRule& rule, int tensor, bool isResult, const TensorLayout& layout,
                                          const Shape& shape) const {
    if (!anyRelaid_ && (from.op == kNoId || !onAlignedMesh_[from.op])) return std::nullopt;
    return exactSharding(rule, tensor, isResult, layout, shape);
  }
  static std::optional<OpSharding> exactSharding(const OpRule& rule, int tensor, bool isResult, const TensorLayout& layout,
                                                 const Shape& shape) {
    if (inDimOrder(layout)) return std::nullopt;
    OpSharding s = shardingFromNeighbour(rule, tensor, isResult, layout);
    TensorLayout got = isResult ? finalResultLayout(rule, s, tensor, shape) : operandLayout(rule, s, tensor, shape);
    if (!got.sameAs(layout)) return std::nullopt;
    return s;
  }

  // Whether the layout is one an op's own device matrix gives (coarsest form): the axes that split
  // dims, read dim by dim, run in mesh order, and the axes nothing uses (a strategy's repeated
  // devices) come after every used one.
  static bool inDimOrder(const TensorLayout& layout) {
    TensorLayout c = layout.coarsestForm();
    std::vector<bool> used(c.mesh.rank(), false);
    int last = -1;
    for (const auto& axes : c.dims)
      for (int a : axes) {
        if (a < last) return false;
        last = a;
        used[a] = true;
      }
    for (int a : c.partialAxes) used[a] = true;
    auto firstUnused = std::find(used.begin(), used.end(), false);
    return std::find(firstUnused, used.end(), true) == used.end();
  }

  void chooseConsumer(OpId id, int operand, const TensorLayout& layout, Source from, std::deque<OpId>& queue,
                      OriginKind kind = OriginKind::Propagated) {
    Op& op = graph_.op(id);
    if (takesLayoutsFromNeighbours(op) && in_.rules[id]) {
      visited_[id] = true;
      queue.push_back(id);
      StrategyOrigin origin = originFrom(kind, from, StrategyOrigin::Edge::FromProducer);
      onAlignedMesh_[id] = from.op != kNoId && onAlignedMesh_[from.op];
      assignSharding(op, shardingFromNeighbour(*in_.rules[id], 0, false, layout), origin);
      return;
    }
    if (!in_.rules[id]) return;
    DType dtype = graph_.value(op.operands[0].isValue() ? op.operands[0].value : op.results[0]).type.dtype;
    const Shape& shape = in_.views[id].operandShapes[operand];
    const OpRule& rule = *in_.rules[id];
    std::optional<OpSharding> exact = exactSharding(from, rule, operand, false, layout, shape);
    choose(
        id, from, StrategyOrigin::Edge::FromProducer, edgeContext(0, operand, dtype, layout),
        [&](const OpSharding& s) { return edgeCost(layout, operandLayout(rule, s, operand, shape), dtype); }, exact, queue, kind);
  }

  void chooseProducer(OpId id, int result, const TensorLayout& need, Source consumer, std::deque<OpId>& queue,
                      OriginKind kind = OriginKind::Propagated) {
    Op& op = graph_.op(id);
    if (!in_.rules[id]) return;
    if (takesLayoutsFromNeighbours(op)) {
      visited_[id] = true;
      queue.push_back(id);
      StrategyOrigin origin = originFrom(OriginKind::Propagated, consumer, StrategyOrigin::Edge::FromConsumer);
      onAlignedMesh_[id] = consumer.op != kNoId && onAlignedMesh_[consumer.op];
      assignSharding(op, shardingFromNeighbour(*in_.rules[id], 0, true, need), origin);
      return;
    }
    DType dtype = graph_.value(op.results[result]).type.dtype;
    const Shape& shape = in_.views[id].resultShapes[result];
    const OpRule& rule = *in_.rules[id];
    std::optional<OpSharding> exact = exactSharding(consumer, rule, result, true, need, shape);
    choose(
        id, consumer, StrategyOrigin::Edge::FromConsumer, edgeContext(1, result, dtype, need),
        [&](const OpSharding& s) { return edgeCost(finalResultLayout(rule, s, result, shape), need, dtype); }, exact, queue,
        kind);
  }

  Graph& graph_;
  const PropagationInput& in_;
  std::vector<std::vector<Use>> uses_;
  std::vector<bool> visited_;
  // Ops of the same type, rule and shapes have the same candidates (every layer of a model).
  std::unordered_map<EdgeKey, std::vector<OpSharding>, IntKeyHash> candidateCache_;
  std::unordered_map<EdgeKey, Decision, IntKeyHash> decisionCache_;
  std::unordered_map<EdgeKey, RedistCost, IntKeyHash> planCache_;
  std::deque<OpSharding> exactShardings_;  // the neighbours' layouts decisions chose (stable addresses)
  std::vector<bool> onAlignedMesh_;        // per op: re-laid, or took such an op's layout over
  // Some configured op was re-laid: the plan's strategies share one mesh order, and every op may
  // keep a neighbour's layout out of dim order (Shardy's propagation), not only a re-laid one's.
  bool anyRelaid_ = false;
};

}  // namespace

void runShardingPropagation(Graph& graph, const PropagationInput& in) {
  ShardingPropagation(graph, in, alignConfiguredMeshes(graph, in)).run();
  int64_t devices = in.options.deviceNum;
  finishPropagation(graph, in, [&](OpId, const OpRule& r, const OpView& v) { return dataParallelSharding(r, v, devices); });
}

}  // namespace irc
