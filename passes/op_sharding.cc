#include "passes/op_sharding.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/layout_notation.h"

namespace irc {

OpView viewOf(const Graph& graph, const Op& op) {
  OpView v{op.name, op.type, {}, {}, {}};
  for (const Operand& o : op.operands)
    if (o.isValue()) {
      v.operandNames.push_back(graph.value(o.value).name);
      v.operandShapes.push_back(graph.value(o.value).type.shape);
    }
  for (ValueId r : op.results) v.resultShapes.push_back(graph.value(r).type.shape);
  return v;
}

namespace {

StrategyError err(std::string message, int operand = -1) { return {std::move(message), operand}; }

std::string factorRole(const OpRule& rule, const OpView& op, int f) {
  // Where a factor appears first, for messages: "dim 1 of 'x'".
  for (size_t k = 0; k < rule.operands.size(); ++k)
    for (size_t d = 0; d < rule.operands[k].size(); ++d)
      for (int g : rule.operands[k][d])
        if (g == f && k < op.operandNames.size()) return fmt::format("dim {} of '{}'", d, op.operandNames[k]);
  return fmt::format("factor {}", factorName(f));
}

// Op-specific MindSpore rules beyond what the factor rule expresses.
std::optional<StrategyError> checkOpSpecific(const OpRule& rule, const OpView& op, const std::vector<int64_t>& splits) {
  if (op.type == "Gather") {
    if (op.operandShapes[0].size() > 2)
      return err(fmt::format("Gather '{}': MindSpore shards Gather only with params of rank 1 or 2; '{}' has shape {}", op.name,
                             op.operandNames[0], formatShape(op.operandShapes[0])),
                 0);
    int vocab = -1;
    for (int f = 0; f < rule.factorCount(); ++f)
      if (rule.isReduction(f)) vocab = f;
    bool indicesSplit = false;
    for (const auto& dim : rule.operands[1])
      for (int f : dim) indicesSplit |= splits[f] > 1;
    if (vocab >= 0 && splits[vocab] > 1 && indicesSplit)
      return err(fmt::format("Gather '{}' splits its params' axis dim {} ways; MindSpore then requires the indices unsplit",
                             op.name, splits[vocab]),
                 1);
  }
  return std::nullopt;
}

std::string replicatedWhy(const OpView& op) {
  if (op.type == "Softmax" || op.type == "LogSoftmax") return "its softmax axis";
  if (op.type == "LayerNorm") return "a normalized dim";
  if (op.type == "Concat" || op.type == "Split") return "its concat/split axis";
  if (op.type == "SoftmaxCrossEntropyWithLogits") return "the class dim";
  return "a dim the op needs whole";
}

}  // namespace

ShardingResult shardingFromStrategy(const OpRule& rule, const OpView& op, const ShardStrategy& strategy, int64_t deviceNum,
                                    const std::optional<ShardStrategy>& outStrategy) {
  if (op.type == "Reshape") return err(fmt::format("Reshape '{}' takes no strategy: its layouts come from its neighbours", op.name));
  bool oneHot = op.type == "OneHot";
  size_t tensors = rule.operands.size();
  if (!oneHot && strategy.size() != tensors)
    return err(fmt::format("{} '{}' has {} tensor inputs; the strategy has {} tuples", op.type, op.name, tensors, strategy.size()));
  std::vector<int64_t> splits(rule.factorCount(), 0);
  std::vector<std::string> setBy(rule.factorCount());  // "dim 1 of 'x'": where a factor's split came from
  auto setSplit = [&](int f, int64_t s, int k, size_t d, const std::string& tensor) -> std::optional<StrategyError> {
    if (splits[f] == 0 || splits[f] == s) {
      if (splits[f] == 0) setBy[f] = fmt::format("dim {} of '{}'", d, tensor);
      splits[f] = s;
      return std::nullopt;
    }
    return err(fmt::format("{} '{}': dim {} of '{}' is split {} ways but {} is split {} ways; they are the same dim of the op "
                           "(factor {}) and must be split alike",
                           op.type, op.name, d, tensor, s, setBy[f], splits[f], factorName(f)),
               k);
  };
  if (oneHot) {
    // MindSpore gives OneHot's strategy on its output, then () for the scalar operands.
    if (strategy.empty() || strategy[0].size() != op.resultShapes[0].size())
      return err(fmt::format("OneHot '{}' takes its strategy on the output (rank {}), then () for scalar operands", op.name,
                             op.resultShapes[0].size()));
    for (size_t i = 1; i < strategy.size(); ++i)
      if (!strategy[i].empty()) return err(fmt::format("OneHot '{}': strategy tuple {} must be () (a scalar operand)", op.name, i));
    for (size_t d = 0; d < strategy[0].size(); ++d) {
      int64_t s = strategy[0][d];
      if (s < 1 || op.resultShapes[0][d] % s != 0)
        return err(fmt::format("OneHot '{}': {} does not divide dim {} of the output (size {}); valid: {}", op.name, s, d,
                               op.resultShapes[0][d], divisorsText(op.resultShapes[0][d])));
      splits[rule.results[0][d][0]] = s;
    }
  } else {
    for (size_t k = 0; k < tensors; ++k) {
      const Shape& shape = op.operandShapes[k];
      if (strategy[k].size() != shape.size())
        return err(fmt::format("{} '{}': strategy {} for '{}' has {} entries; it has rank {}", op.type, op.name,
                               formatIntTuple(strategy[k]), op.operandNames[k], strategy[k].size(), shape.size()),
                   static_cast<int>(k));
      for (size_t d = 0; d < shape.size(); ++d) {
        int64_t s = strategy[k][d];
        if (s < 1 || shape[d] % s != 0)
          return err(fmt::format("{} '{}': {} does not divide dim {} of '{}' (size {}); valid: {}", op.type, op.name, s, d,
                                 op.operandNames[k], shape[d], divisorsText(shape[d])),
                     static_cast<int>(k));
        const auto& factors = rule.operands[k][d];
        if (factors.empty()) {
          if (s != 1)
            return err(fmt::format("{} '{}': dim {} of '{}' has size 1 and broadcasts; it cannot be split ({} given)", op.type,
                                   op.name, d, op.operandNames[k], s),
                       static_cast<int>(k));
          continue;
        }
        if (auto e = setSplit(factors[0], s, static_cast<int>(k), d, op.operandNames[k])) return *e;
      }
    }
  }
  for (int f = 0; f < rule.factorCount(); ++f) {
    if (splits[f] == 0) splits[f] = 1;
    if (rule.isReplicated(f) && splits[f] > 1)
      return err(fmt::format("{} '{}' cannot split {} ({}): it is {}; its strategy must be 1", op.type, op.name,
                             factorRole(rule, op, f), splits[f], replicatedWhy(op)));
  }
  if (auto e = checkOpSpecific(rule, op, splits)) return *e;

  OpSharding s;
  std::vector<int64_t> dev;
  for (int f : rule.mindsporeOrder) dev.push_back(splits[f]);
  int64_t used = 1;
  for (int64_t d : dev) used *= d;
  if (deviceNum % used != 0)
    return err(fmt::format("{} '{}': the strategy uses {} devices, which does not divide device_num {}", op.type, op.name, used,
                           deviceNum));
  int64_t repeat = deviceNum / used;
  bool repeatLeft = false;
  if (op.type == "Gather")
    for (int f = 0; f < rule.factorCount(); ++f) repeatLeft |= rule.isReduction(f) && splits[f] > 1;
  int shift = 0;
  if (repeat > 1) {
    if (repeatLeft) {
      dev.insert(dev.begin(), repeat);
      shift = 1;
    } else {
      dev.push_back(repeat);
    }
  }
  s.mesh = DeviceMatrix::unnamed(dev);
  s.factorAxes.assign(rule.factorCount(), {});
  for (size_t i = 0; i < rule.mindsporeOrder.size(); ++i) s.factorAxes[rule.mindsporeOrder[i]] = {static_cast<int>(i) + shift};
  s.requestedOutputs.assign(rule.results.size(), std::nullopt);

  if (outStrategy) {
    // MindSpore's MatMul out_strategy ((m*k, n)): the output reduce-scattered on dim 0.
    int m = rule.results[0][0].empty() ? -1 : rule.results[0][0][0];
    int k = -1;
    for (int f = 0; f < rule.factorCount(); ++f)
      if (rule.isReduction(f)) k = f;
    if (op.type != "MatMul" || k < 0)
      return err(fmt::format("{} '{}' takes no out_strategy (only MatMul does, to reduce-scatter its output)", op.type, op.name));
    ShardStrategy expected = {{splits[m] * splits[k], splits[rule.results[0][1][0]]}};
    if (*outStrategy != expected)
      return err(fmt::format("MatMul '{}': out_strategy must be {} (dim 0 split by m*k to reduce-scatter the partial sum); got {}",
                             op.name, formatIntTuple(expected[0]), formatIntTuple(outStrategy->at(0))));
    TensorLayout out = resultLayout(rule, s, 0, op.resultShapes[0]);
    out.dims[0].insert(out.dims[0].end(), s.factorAxes[k].begin(), s.factorAxes[k].end());
    out.partialAxes.clear();
    s.requestedOutputs[0] = out;
  }
  return s;
}

ShardingResult shardingFromLayouts(const OpRule& rule, const OpView& op, const std::vector<DimAxes>& inLayouts,
                                   const DeviceMatrix& mesh, const std::optional<std::vector<DimAxes>>& outLayouts) {
  if (op.type == "Reshape") return err(fmt::format("Reshape '{}' takes no layout: its layouts come from its neighbours", op.name));
  if (inLayouts.size() != rule.operands.size())
    return err(fmt::format("{} '{}' has {} tensor inputs; in_layout has {} tensor maps", op.type, op.name, rule.operands.size(),
                           inLayouts.size()));
  OpSharding s;
  s.mesh = mesh;
  s.layoutForm = true;
  s.factorAxes.assign(rule.factorCount(), {});
  std::vector<bool> set(rule.factorCount(), false);
  std::vector<int> axisFactor(mesh.rank(), -1);
  for (size_t k = 0; k < inLayouts.size(); ++k) {
    for (size_t d = 0; d < inLayouts[k].size(); ++d) {
      const auto& axes = inLayouts[k][d];
      const auto& factors = rule.operands[k][d];
      if (factors.empty()) {
        if (!axes.empty())
          return err(fmt::format("{} '{}': dim {} of '{}' has size 1 and broadcasts; it cannot be split", op.type, op.name, d,
                                 op.operandNames[k]),
                     static_cast<int>(k));
        continue;
      }
      int f = factors[0];
      if (set[f] && s.factorAxes[f] != axes)
        return err(fmt::format("{} '{}': dim {} of '{}' is laid out as {} but the same dim of another input as {}; they must "
                               "agree",
                               op.type, op.name, d, op.operandNames[k], axes.empty() ? "None" : mesh.names[axes[0]],
                               s.factorAxes[f].empty() ? "None" : mesh.names[s.factorAxes[f][0]]),
                   static_cast<int>(k));
      set[f] = true;
      s.factorAxes[f] = axes;
      for (int a : axes) {
        if (axisFactor[a] >= 0 && axisFactor[a] != f)
          return err(fmt::format("{} '{}': device axis '{}' splits two different dims of the op", op.type, op.name, mesh.names[a]),
                     static_cast<int>(k));
        axisFactor[a] = f;
      }
    }
  }
  for (int f = 0; f < rule.factorCount(); ++f)
    if (rule.isReplicated(f) && !s.factorAxes[f].empty())
      return err(fmt::format("{} '{}' cannot split {}: it is {}", op.type, op.name, factorRole(rule, op, f), replicatedWhy(op)));
  s.requestedOutputs.assign(rule.results.size(), std::nullopt);
  if (outLayouts) {
    for (size_t r = 0; r < outLayouts->size() && r < rule.results.size(); ++r) {
      TensorLayout want{mesh, op.resultShapes[r], (*outLayouts)[r], {}, ReduceOp::Sum};
      TensorLayout computed = resultLayout(rule, s, static_cast<int>(r), op.resultShapes[r]);
      TensorLayout scattered = computed;
      if (!scattered.dims.empty())
        scattered.dims[0].insert(scattered.dims[0].end(), computed.partialAxes.begin(), computed.partialAxes.end());
      scattered.partialAxes.clear();
      if (!want.sameAs(scattered) && !want.sameAs(TensorLayout{computed.mesh, computed.shape, computed.dims, {}, ReduceOp::Sum}))
        return err(fmt::format("{} '{}': out_layout {} is neither the computed output {} nor its reduce-scatter", op.type, op.name,
                               printAliasLayout(want), printAliasLayout(computed)));
      if (!want.sameAs(TensorLayout{computed.mesh, computed.shape, computed.dims, {}, ReduceOp::Sum})) s.requestedOutputs[r] = want;
    }
  }
  return s;
}

namespace {
TensorLayout layoutFor(const OpSharding& s, const DimFactors& dims, const Shape& shape) {
  TensorLayout l;
  l.mesh = s.mesh;
  l.shape = shape;
  for (const auto& factors : dims) {
    std::vector<int> axes;
    for (int f : factors) axes.insert(axes.end(), s.factorAxes[f].begin(), s.factorAxes[f].end());
    l.dims.push_back(axes);
  }
  return l;
}
}  // namespace

TensorLayout operandLayout(const OpRule& rule, const OpSharding& s, int operand, const Shape& shape) {
  return layoutFor(s, rule.operands.at(operand), shape);
}

std::vector<int> partialAxes(const OpRule& rule, const OpSharding& s) {
  std::vector<int> axes;
  for (int f = 0; f < rule.factorCount(); ++f)
    if (rule.isReduction(f))
      for (int a : s.factorAxes[f])
        if (s.mesh.dims[a] > 1) axes.push_back(a);
  std::sort(axes.begin(), axes.end());
  return axes;
}

TensorLayout resultLayout(const OpRule& rule, const OpSharding& s, int result, const Shape& shape) {
  TensorLayout l = layoutFor(s, rule.results.at(result), shape);
  l.partialAxes = partialAxes(rule, s);
  if (l.isPartial()) l.partialOp = rule.reduceOp;
  return l;
}

std::vector<ForwardOp> forwardOps(const OpRule& rule, const OpSharding& s, const OpView& op) {
  std::vector<int> axes = partialAxes(rule, s);
  if (axes.empty()) return {};
  int64_t groupSize = 1;
  for (int a : axes) groupSize *= s.mesh.dims[a];
  std::vector<std::string> names;
  // Axes counted from the right, as MindSpore's tensor maps (and every other reason line) count them.
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) names.push_back(fmt::format("device axis {}", s.mesh.rank() - 1 - *it));
  std::string where = fmt::format("{}", fmt::join(names, ", "));
  std::vector<ForwardOp> ops;
  ForwardOp reduce;
  reduce.axes = axes;
  reduce.reduceOp = rule.reduceOp;
  std::string what = op.type == "Gather" ? "looks up a split vocabulary" : "splits its contracted dim";
  if (op.type.rfind("Reduce", 0) == 0) what = "splits a reduced dim";
  bool scatter = !s.requestedOutputs.empty() && s.requestedOutputs[0].has_value();
  reduce.kind = scatter ? ForwardOp::Kind::ReduceScatter : ForwardOp::Kind::AllReduce;
  reduce.reason = fmt::format("{} {} {} ways ({}): the output is partial{}", op.name, what, groupSize, where,
                              scatter ? "; out_strategy asks for it reduce-scattered on dim 0" : "");
  ops.push_back(reduce);
  if (op.type == "ReduceMean") {
    ForwardOp div;
    div.kind = ForwardOp::Kind::RealDiv;
    div.axes = axes;
    div.divisor = groupSize;
    div.reason = fmt::format("{} averaged {} local means: divide their sum by {}", op.name, groupSize, groupSize);
    ops.push_back(div);
  }
  return ops;
}

ShardStrategy strategyOf(const OpRule& rule, const OpSharding& s, const OpView& op) {
  ShardStrategy out;
  auto splitsOf = [&](const DimFactors& dims) {
    IntTuple t;
    for (const auto& factors : dims) {
      int64_t n = 1;
      for (int f : factors)
        for (int a : s.factorAxes[f]) n *= s.mesh.dims[a];
      t.push_back(n);
    }
    return t;
  };
  if (op.type == "OneHot") {
    // MindSpore's form (parallel-semantics.md §2): the output's tuple, then () for on_value
    // and off_value.
    out.push_back(splitsOf(rule.results[0]));
    out.push_back({});
    out.push_back({});
    return out;
  }
  for (const auto& dims : rule.operands) out.push_back(splitsOf(dims));
  return out;
}

std::vector<DimAxes> layoutMapsOf(const OpRule& rule, const OpSharding& s) {
  std::vector<DimAxes> maps;
  for (size_t k = 0; k < rule.operands.size(); ++k) maps.push_back(layoutFor(s, rule.operands[k], Shape(rule.operands[k].size(), 1)).dims);
  return maps;
}

bool enforceCompoundOrder(const OpRule& rule, OpSharding& s) {
  bool changed = false;
  auto fix = [&](const std::vector<DimFactors>& tensors) {
    for (const DimFactors& dims : tensors)
      for (const auto& factors : dims) {
        bool majorFull = true;
        for (int f : factors) {
          if (!majorFull && !s.factorAxes[f].empty()) {
            s.factorAxes[f].clear();
            changed = true;
          }
          int64_t split = 1;
          for (int a : s.factorAxes[f]) split *= s.mesh.dims[a];
          majorFull = majorFull && split == rule.factorSizes[f];
        }
      }
  };
  fix(rule.operands);
  fix(rule.results);
  return changed;
}

int64_t devicesUsed(const OpRule& rule, const OpSharding& s) {
  int64_t n = 1;
  for (int f = 0; f < rule.factorCount(); ++f)
    for (int a : s.factorAxes[f]) n *= s.mesh.dims[a];
  return n;
}

}  // namespace irc
