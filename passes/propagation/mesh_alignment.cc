#include "passes/propagation/mesh_alignment.h"

#include <algorithm>
#include <optional>

#include "ops/op_sharding.h"
#include "passes/plan/plan_queries.h"
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
          !op.parallel->sharding.layoutForm)
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
  bool isParameter(ValueId v) const { return std::binary_search(parameters_.begin(), parameters_.end(), v); }

  // The one operand of an unconfigured op that carries a layout through it: the only tensor
  // operand that is neither a trained weight nor a scalar. -1 when there is none or several.
  int carryingOperand(const Op& op) const {
    int found = -1, tensor = 0;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].isValue()) continue;
      const Value& v = graph_.value(op.operands[i].value);
      if (!isParameter(op.operands[i].value) && !v.type.shape.empty()) {
        if (found >= 0) return -1;
        found = tensor;
      }
      ++tensor;
    }
    return found;
  }

  // The layout `value` arrives in if every unconfigured op from the nearest configured producer
  // on takes its operand's layout exactly; nullopt where the chain is longer, branches, or an
  // op cannot take the layout through.
  std::optional<TensorLayout> arriving(ValueId value, int depth) const {
    const Value& v = graph_.value(value);
    if (v.producer == kNoId) return producedLayout(graph_, in_, value);
    const Op& op = graph_.op(v.producer);
    if (!in_.rules[v.producer]) return std::nullopt;
    if (op.parallel->hasSharding) return producedLayout(graph_, in_, value);
    if (depth >= kMaxChain) return std::nullopt;
    int k = carryingOperand(op);
    if (k < 0) return std::nullopt;
    int position = 0;
    ValueId carried = kNoId;
    for (const Operand& o : op.operands)
      if (o.isValue() && position++ == k) carried = o.value;
    std::optional<TensorLayout> from = arriving(carried, depth + 1);
    if (!from || from->isPartial()) return std::nullopt;
    const OpRule& rule = *in_.rules[v.producer];
    const OpView& view = in_.views[v.producer];
    OpSharding s = shardingFromNeighbour(rule, k, false, *from);
    if (!operandLayout(rule, s, k, view.operandShapes[k]).sameAs(*from)) return std::nullopt;
    TensorLayout out = resultLayout(rule, s, v.resultIndex, view.resultShapes[v.resultIndex]);
    if (out.isPartial()) return std::nullopt;
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
};

}  // namespace

std::vector<OpId> alignConfiguredMeshes(Graph& graph, const PropagationInput& in) { return MeshAlignment(graph, in).run(); }

}  // namespace irc
