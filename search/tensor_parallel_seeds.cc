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

namespace {

// One op's seed: its strategy (none: the op is left to propagation), the shapes the strategy
// must divide (one per tensor operand), and whether its results leave split on their features.
struct Seed {
  std::optional<ShardStrategy> strategy;
  std::vector<const Shape*> shapes;
  bool split = false;
};

const Shape& shapeOf(const Graph& graph, const Operand& o) { return graph.value(o.value).type.shape; }

// Expert tensor parallelism with TP (Megatron-Core's default): the first product of each
// expert column-parallel (its output features over tp), the one reading those row-parallel.
Seed expertProductSeed(const Graph& graph, const Op& op, const ParallelDims& d, const std::vector<bool>& featureSplit) {
  const bool row = featureSplit[op.operands[0].value];
  const bool transposed = flag(op, "transpose_b");
  IntTuple xs{d.dp / d.ep, d.ep, 1, row ? d.tp : 1}, ws{d.ep, 1, 1};
  ws[(row != transposed) ? 1 : 2] = d.tp;
  return {ShardStrategy{xs, ws}, {&shapeOf(graph, op.operands[0]), &shapeOf(graph, op.operands[1])}, !row && d.tp > 1};
}

// The token permutation around them: each data-parallel rank dispatches and combines its own
// groups (every operand's dim 0), so the tokens reach the AlltoAll as they left the router, as
// MindFormers' and Megatron's dispatchers run (frontends/hf_config's plan).
Seed routingSeed(const Graph& graph, const Op& op, const ParallelDims& d) {
  Seed seed{ShardStrategy{}, {}, false};
  for (const Operand& o : op.operands) {
    if (!o.isValue()) continue;
    IntTuple t(shapeOf(graph, o).size(), 1);
    if (!t.empty()) t[0] = d.dp;
    seed.strategy->push_back(std::move(t));
    seed.shapes.push_back(&shapeOf(graph, o));
  }
  return seed;
}

bool isLinear(const Graph& graph, const Op& op) {
  return isProduct(op) && op.operands.size() >= 2 && op.operands[0].isValue() && isWeight(graph, op.operands[1], 2) &&
         !flag(op, "transpose_a") && !isWeight(graph, op.operands[0], shapeOf(graph, op.operands[0]).size());
}

// Megatron's linear layer: column-parallel, or row-parallel after a column-parallel one.
Seed linearSeed(const Graph& graph, const Op& op, const ParallelDims& d, const std::vector<bool>& featureSplit, int64_t experts) {
  const Shape& x = shapeOf(graph, op.operands[0]);
  const Shape& w = shapeOf(graph, op.operands[1]);
  bool row = featureSplit[op.operands[0].value];
  bool transposed = flag(op, "transpose_b");
  // In a mixture of experts, a router's logits (as many as the experts; Megatron-Core keeps
  // the router whole) or a gate to fewer features than ranks (Qwen2-MoE's shared-expert
  // gate) stays replicated: data-parallel only.
  const int64_t outFeatures = transposed ? w[0] : w[1];
  const bool whole = experts > 0 && !row && (outFeatures == experts || outFeatures % d.tp != 0);
  IntTuple xs(x.size(), 1), ws{1, 1};
  // The tokens: [B, S, .] over data and context ranks on two dims, [B * S, .] on one.
  xs[0] = d.dp;
  if (x.size() >= 3) xs[1] = d.cp;
  else xs[0] *= d.cp;
  if (row) xs.back() = d.tp;
  // The weight's output features (column-parallel) or its contraction (row-parallel).
  if (!whole) ws[(row != transposed) ? 0 : 1] = d.tp;
  return {ShardStrategy{xs, ws}, {&x, &w}, !row && !whole};
}

// An embedding lookup: the indices over the data and context ranks, the table whole.
Seed lookupSeed(const Graph& graph, const Op& op, const ParallelDims& d) {
  const Shape& indices = shapeOf(graph, op.operands[1]);
  if (indices.empty()) return {};
  IntTuple is(indices.size(), 1);
  is[0] = d.dp;
  if (indices.size() >= 2) is[1] = d.cp;
  else is[0] *= d.cp;
  return {ShardStrategy{IntTuple{1, 1}, is}, {&shapeOf(graph, op.operands[0]), &indices}, false};
}

// The rank's query chunk against every key (and value): heads over the tensor ranks, split as
// the column-parallel projections left them.
Seed attentionSeed(const Graph& graph, const Op& op, const ParallelDims& d, const std::vector<bool>& featureSplit) {
  return {ShardStrategy{IntTuple{d.dp, d.tp, d.cp, 1}, IntTuple{d.dp, d.tp, 1, 1}},
          {&shapeOf(graph, op.operands[0]), &shapeOf(graph, op.operands[1])},
          featureSplit[op.operands[0].value] || featureSplit[op.operands[1].value]};
}

// Sequence parallelism: tokens split over data and tensor ranks; parameters (a norm's gain and
// bias) whole.
Seed tokenwiseSeed(const Graph& graph, const Op& op, const ParallelDims& d) {
  Seed seed;
  for (const Operand& o : op.operands) {
    if (!o.isValue()) continue;
    IntTuple t(shapeOf(graph, o).size(), 1);
    if (graph.value(o.value).kind != ValueKind::Parameter) t[0] = d.dp * d.tp;
    if (!seed.strategy) seed.strategy = ShardStrategy{};
    seed.strategy->push_back(std::move(t));
    seed.shapes.push_back(&shapeOf(graph, o));
  }
  return seed;
}

Seed seedOf(const Graph& graph, const Op& op, const ParallelDims& d, const std::vector<bool>& featureSplit, int64_t experts) {
  if ((d.ep > 1 || d.tp > 1) && isExpertProduct(graph, op)) return expertProductSeed(graph, op, d, featureSplit);
  if ((d.ep > 1 || d.tp > 1) && isExpertRouting(op)) return routingSeed(graph, op, d);
  if (isLinear(graph, op)) return linearSeed(graph, op, d, featureSplit, experts);
  if (isLookup(op) && op.operands.size() >= 2 && isWeight(graph, op.operands[0], 2) && op.operands[1].isValue())
    return lookupSeed(graph, op, d);
  if (d.cp > 1 && isAttentionProduct(graph, op)) return attentionSeed(graph, op, d, featureSplit);
  if (d.sp && d.tp > 1 && isTokenwise(graph, op, featureSplit)) return tokenwiseSeed(graph, op, d);
  // Any other op passes a feature split on from what it reads (an activation between products).
  Seed passOn;
  for (const Operand& o : op.operands)
    if (o.isValue() && graph.value(o.value).kind != ValueKind::Parameter && featureSplit[o.value]) passOn.split = true;
  return passOn;
}

}  // namespace

std::optional<std::string> seedTensorParallel(Graph& graph, const ParallelDims& dims) {
  // Per value: split on its features by a column-parallel product upstream.
  std::vector<bool> featureSplit(graph.values.size(), false);
  const int64_t experts = expertsOf(graph).first;
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    if (op.inserted()) continue;
    Seed seed = seedOf(graph, op, dims, featureSplit, experts);
    if (seed.strategy) {
      for (size_t i = 0; i < seed.shapes.size(); ++i)
        if (auto e = divides(op, *seed.shapes[i], (*seed.strategy)[i])) return e;
      op.annotation->inStrategy = std::move(*seed.strategy);
    }
    for (ValueId r : op.results) featureSplit[r] = seed.split;
  }
  return std::nullopt;
}

}  // namespace irc
