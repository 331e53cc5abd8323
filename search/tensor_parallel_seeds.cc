#include "search/tensor_parallel_seeds.h"

#include <fmt/format.h>

#include "ir/dtype.h"
#include "ops/op_traits.h"

namespace irc {
namespace {

bool isWeight(const Graph& graph, const Operand& o, size_t rank) {
  if (!o.isValue()) return false;
  const Value& v = graph.value(o.value);
  return v.kind == ValueKind::Parameter && v.trainable && isFloat(v.type.dtype) && v.type.shape.size() == rank;
}

bool flag(const Op& op, const char* name) {
  auto it = op.attrs.find(name);
  if (it == op.attrs.end()) return false;
  const bool* b = std::get_if<bool>(&it->second);
  return b && *b;
}

std::optional<std::string> divides(const Op& op, const Shape& shape, const IntTuple& split) {
  for (size_t d = 0; d < split.size() && d < shape.size(); ++d)
    if (shape[d] % split[d] != 0)
      return fmt::format("op '{}': {} ranks do not divide dimension {} of size {}", op.name, split[d], d, shape[d]);
  return std::nullopt;
}

// A norm, or a residual add of two whole activations of the same shape: the ops sequence
// parallelism splits by tokens.
bool isTokenwise(const Graph& graph, const Op& op, const std::vector<bool>& featureSplit) {
  auto activation = [&](const Operand& o) {
    return o.isValue() && graph.value(o.value).kind != ValueKind::Parameter && !featureSplit[o.value] &&
           graph.value(o.value).type.shape.size() >= 2;
  };
  if (isNorm(op)) return !op.operands.empty() && activation(op.operands[0]);
  if (!isAdd(op) || op.operands.size() != 2 || !activation(op.operands[0]) || !activation(op.operands[1])) return false;
  return graph.value(op.operands[0].value).type.shape == graph.value(op.operands[1].value).type.shape;
}

// A grouped expert product: dispatched tokens [groups, E, slots, in] by weights [E, ., .].
bool isExpertProduct(const Graph& graph, const Op& op) {
  if (!isBatchedProduct(op) || op.operands.size() < 2 || !op.operands[0].isValue() || !isWeight(graph, op.operands[1], 3) ||
      flag(op, "transpose_a"))
    return false;
  const Shape& x = graph.value(op.operands[0].value).type.shape;
  return x.size() == 4 && x[1] == graph.value(op.operands[1].value).type.shape[0];
}

}  // namespace

bool isAttentionProduct(const Graph& graph, const Op& op) {
  if (!isBatchedProduct(op) || op.operands.size() < 2 || flag(op, "transpose_a")) return false;
  for (size_t i = 0; i < 2; ++i) {
    const Operand& o = op.operands[i];
    if (!o.isValue() || graph.value(o.value).kind == ValueKind::Parameter || graph.value(o.value).type.shape.size() != 4)
      return false;
  }
  return true;
}

std::pair<int64_t, double> expertsOf(const Graph& graph) {
  int64_t experts = 0;
  double elements = 0;
  for (const Op& op : graph.ops) {
    if (op.inserted() || !isExpertProduct(graph, op)) continue;
    const Shape& w = graph.value(op.operands[1].value).type.shape;
    experts = std::max(experts, w[0]);
    elements += static_cast<double>(numElements(w));
  }
  return {experts, elements};
}

std::optional<std::string> seedTensorParallel(Graph& graph, const ParallelDims& dims) {
  const int64_t dp = dims.dp, tp = dims.tp, ep = dims.ep, cp = dims.cp;
  const bool sequenceParallel = dims.sp;
  // Per value: split on its features by a column-parallel product upstream.
  std::vector<bool> featureSplit(graph.values.size(), false);
  const int64_t experts = expertsOf(graph).first;
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    if (op.inserted()) continue;
    bool split = false;
    std::optional<ShardStrategy> seed;
    std::vector<const Shape*> shapes;
    if ((ep > 1 || tp > 1) && isExpertProduct(graph, op)) {
      // Expert tensor parallelism with TP (Megatron-Core's default): the first product of each
      // expert column-parallel (its output features over tp), the one reading those row-parallel.
      const bool row = featureSplit[op.operands[0].value];
      const bool transposed = flag(op, "transpose_b");
      IntTuple xs{dp / ep, ep, 1, row ? tp : 1}, ws{ep, 1, 1};
      ws[(row != transposed) ? 1 : 2] = tp;
      seed = ShardStrategy{xs, ws};
      shapes = {&graph.value(op.operands[0].value).type.shape, &graph.value(op.operands[1].value).type.shape};
      split = !row && tp > 1;
    } else if ((ep > 1 || tp > 1) && isExpertRouting(op)) {
      // The token permutation around them: each data-parallel rank dispatches and combines its
      // own groups (every operand's dim 0), so the tokens reach the AlltoAll as they left the
      // router, as MindFormers' and Megatron's dispatchers run (frontends/hf_config's plan).
      seed = ShardStrategy{};
      for (const Operand& o : op.operands) {
        if (!o.isValue()) continue;
        const Shape& shape = graph.value(o.value).type.shape;
        IntTuple t(shape.size(), 1);
        if (!t.empty()) t[0] = dp;
        seed->push_back(std::move(t));
        shapes.push_back(&shape);
      }
    } else if (isProduct(op) && op.operands.size() >= 2 && op.operands[0].isValue() && isWeight(graph, op.operands[1], 2) &&
               !flag(op, "transpose_a") &&
               !isWeight(graph, op.operands[0], graph.value(op.operands[0].value).type.shape.size())) {
      const Shape& x = graph.value(op.operands[0].value).type.shape;
      const Shape& w = graph.value(op.operands[1].value).type.shape;
      bool row = featureSplit[op.operands[0].value];
      bool transposed = flag(op, "transpose_b");
      // In a mixture of experts, a router's logits (as many as the experts; Megatron-Core keeps
      // the router whole) or a gate to fewer features than ranks (Qwen2-MoE's shared-expert
      // gate) stays replicated: data-parallel only.
      const int64_t outFeatures = transposed ? w[0] : w[1];
      const bool whole = experts > 0 && !row && (outFeatures == experts || outFeatures % tp != 0);
      IntTuple xs(x.size(), 1), ws{1, 1};
      // The tokens: [B, S, .] over data and context ranks on two dims, [B * S, .] on one.
      xs[0] = dp;
      if (x.size() >= 3) xs[1] = cp;
      else xs[0] *= cp;
      if (row) xs.back() = tp;
      // The weight's output features (column-parallel) or its contraction (row-parallel).
      if (!whole) ws[(row != transposed) ? 0 : 1] = tp;
      seed = ShardStrategy{xs, ws};
      shapes = {&x, &w};
      split = !row && !whole;
    } else if (isLookup(op) && op.operands.size() >= 2 && isWeight(graph, op.operands[0], 2) && op.operands[1].isValue()) {
      const Shape& indices = graph.value(op.operands[1].value).type.shape;
      if (!indices.empty()) {
        IntTuple is(indices.size(), 1);
        is[0] = dp;
        if (indices.size() >= 2) is[1] = cp;
        else is[0] *= cp;
        seed = ShardStrategy{IntTuple{1, 1}, is};
        shapes = {&graph.value(op.operands[0].value).type.shape, &indices};
      }
    } else if (cp > 1 && isAttentionProduct(graph, op)) {
      // The rank's query chunk against every key (and value): heads over the tensor ranks.
      seed = ShardStrategy{IntTuple{dp, tp, cp, 1}, IntTuple{dp, tp, 1, 1}};
      shapes = {&graph.value(op.operands[0].value).type.shape, &graph.value(op.operands[1].value).type.shape};
      // Its heads stay split as the column-parallel projections left them.
      split = featureSplit[op.operands[0].value] || featureSplit[op.operands[1].value];
    } else if (sequenceParallel && tp > 1 && isTokenwise(graph, op, featureSplit)) {
      // Tokens split over data and tensor ranks; parameters (a norm's gain and bias) whole.
      for (const Operand& o : op.operands) {
        if (!o.isValue()) continue;
        const Shape& shape = graph.value(o.value).type.shape;
        IntTuple t(shape.size(), 1);
        if (graph.value(o.value).kind != ValueKind::Parameter) t[0] = dp * tp;
        if (!seed) seed = ShardStrategy{};
        seed->push_back(std::move(t));
        shapes.push_back(&shape);
      }
    } else {
      for (const Operand& o : op.operands)
        if (o.isValue() && graph.value(o.value).kind != ValueKind::Parameter && featureSplit[o.value]) split = true;
    }
    if (seed) {
      for (size_t i = 0; i < shapes.size(); ++i)
        if (auto e = divides(op, *shapes[i], (*seed)[i])) return e;
      op.annotation->inStrategy = std::move(*seed);
    }
    for (ValueId r : op.results) featureSplit[r] = split;
  }
  return std::nullopt;
}

}  // namespace irc
