#include "passes/propagation/mesh_alignment.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "ops/op_sharding.h"
#include "plan/plan_queries.h"
#include "passes/propagation/sharding_assignment.h"

namespace irc {
namespace {

// Unconfigured ops walked back through at most: the Reshape/Transpose/norm chains between two
// configured ops are short, and a bound keeps the walk linear in the graph.
constexpr int kMaxChain = 8;

class MeshAlignment {
 public:
  MeshAlignment(Graph& g, const PropagationInput& in) : graph_(g), in_(in) {
    for (ValueId p : g.parameters) parameters_.push_back(p);
    std::sort(parameters_.begin(), parameters_.end());
  }

  std::vector<OpId> run() {
    std::vector<OpId> configured;
    for (OpId id : graph_.order) {
      const Op& op = graph_.op(id);
      if (in_.rules[id] && op.parallel->hasSharding && std::as_const(op).annotation->inStrategy &&
          !op.parallel->sharding.layoutForm && ordersSplits(id))
        configured.push_back(id);
    }
    std::sort(configured.begin(), configured.end(),
              [&](OpId a, OpId b) { return graph_.op(a).modelIndex < graph_.op(b).modelIndex; });
    std::vector<OpId> relaid;
    for (OpId id : configured)
      if (align(id)) relaid.push_back(id);
    return relaid;
  }

 private:
  // Whether the op's strategy splits two dims of a batched operand (rank 3 or more: [B, heads,
  // S, d], [groups, experts, slots, in]), where two configured ops may order the splits apart.
  // A matrix's (tokens, features) splits are in one order everywhere; skipping those keeps the
  // walk to the few products of a layer (the search compiles dozens of plans).
  bool ordersSplits(OpId id) const {
    for (const IntTuple& operand : strategyOf(graph_.op(id))) {
      if (operand.size() < 3) continue;
      if (std::count_if(operand.begin(), operand.end(), [](int64_t n) { return n > 1; }) >= 2) return true;
    }
    return false;
  }

  bool isParameter(ValueId v) const { return std::binary_search(parameters_.begin(), parameters_.end(), v); }

  // The layout `value` arrives in if every unconfigured op from the nearest configured producers
  // on takes its operands' layouts exactly; nullopt where the chain is longer, an op cannot take
  // a layout through, or two operands bring different layouts. Trained weights, scalars and
  // operands no configured op reaches (rotary tables computed from unannotated inputs) carry
  // nothing. Memoized: the branches of a rotary embedding meet again at its Add.
  std::optional<TensorLayout> arriving(ValueId value, int depth) {
    if (auto it = memo_.find(value); it != memo_.end()) return it->second;
    std::optional<TensorLayout> layout = walkBack(value, depth);
    memo_.emplace(value, layout);
    return layout;
  }

  std::optional<TensorLayout> walkBack(ValueId value, int depth) {
    const Value& v = graph_.value(value);
    if (v.producer == kNoId) return producedLayout(graph_, in_, value);
    const Op& op = graph_.op(v.producer);
    if (!in_.rules[v.producer]) return std::nullopt;
    if (op.parallel->hasSharding) return producedLayout(graph_, in_, value);
    if (depth >= kMaxChain) return std::nullopt;
    const OpRule& rule = *in_.rules[v.producer];
    const OpView& view = in_.views[v.producer];
    std::optional<TensorLayout> out;
    int tensor = 0;
    for (const Operand& o : op.operands) {
      if (!o.isValue()) continue;
      int k = tensor++;
      if (isParameter(o.value) || graph_.value(o.value).type.shape.empty()) continue;
      std::optional<TensorLayout> from = arriving(o.value, depth + 1);
      if (!from) continue;
      if (from->isPartial()) return std::nullopt;
      OpSharding s = shardingFromNeighbour(rule, k, false, *from);
      if (!operandLayout(rule, s, k, view.operandShapes[k]).sameAs(*from)) return std::nullopt;
      TensorLayout result = resultLayout(rule, s, v.resultIndex, view.resultShapes[v.resultIndex]);
      if (result.isPartial() || (out && !out->sameAs(result))) return std::nullopt;
      out = std::move(result);
    }
    return out;
  }

  // Whether both shardings split every operand and result dim the same number of ways.
  bool sameSplits(const OpRule& rule, const OpView& view, const OpSharding& a, const OpSharding& b) const {
    if (strategyOf(rule, a, view) != strategyOf(rule, b, view)) return false;
    for (size_t r = 0; r < view.resultShapes.size(); ++r) {
      TensorLayout la = resultLayout(rule, a, static_cast<int>(r), view.resultShapes[r]);
      TensorLayout lb = resultLayout(rule, b, static_cast<int>(r), view.resultShapes[r]);
      if (la.sliceShape() != lb.sliceShape() || la.isPartial() != lb.isPartial()) return false;
    }
    return true;
  }

  bool align(OpId id) {
    Op& op = graph_.op(id);
    const OpRule& rule = *in_.rules[id];
    const OpView& view = in_.views[id];
    const OpSharding& configured = op.parallel->sharding;
    int tensor = 0;
    for (const Operand& o : op.operands) {
      if (!o.isValue()) continue;
      int k = tensor++;
      if (isParameter(o.value)) continue;
      std::optional<TensorLayout> layout = arriving(o.value, 0);
      if (!layout || layout->isPartial() || layout->mesh.deviceCount() != configured.mesh.deviceCount()) continue;
      if (operandLayout(rule, configured, k, view.operandShapes[k]).sameAs(*layout)) return false;  // in order already
      OpSharding s = shardingFromNeighbour(rule, k, false, *layout);
      if (!operandLayout(rule, s, k, view.operandShapes[k]).sameAs(*layout)) continue;
      s.reduceScattered = configured.reduceScattered;
      s.conversions = configured.conversions;
      if (!sameSplits(rule, view, s, configured)) continue;
      op.parallel->sharding = std::move(s);
      op.parallel->origin.meshOfOperand = k;
      return true;
    }
    return false;
  }

  Graph& graph_;
  const PropagationInput& in_;
  std::vector<ValueId> parameters_;  // sorted
  std::unordered_map<ValueId, std::optional<TensorLayout>> memo_;
};

}  // namespace

std::vector<OpId> alignConfiguredMeshes(Graph& graph, const PropagationInput& in) { return MeshAlignment(graph, in).run(); }

}  // namespace irc
