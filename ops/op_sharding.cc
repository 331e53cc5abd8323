#include "ops/op_sharding.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/layout_notation.h"
#include "ops/op_family.h"

namespace irc {

OpView viewOf(const Graph& graph, const Op& op) {
  OpView v{op.name, op.type, &defOf(op), {}, {}, {}};
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

}  // namespace

ShardingResult shardingFromStrategy(const OpRule& rule, const OpView& op, const ShardStrategy& strategy, int64_t deviceNum,
                                    const std::optional<ShardStrategy>& outStrategy) {
  if (strategyFormOf(*op.def) == StrategyForm::FromNeighbours)
    return err(fmt::format("{} '{}' takes no strategy: its layouts come from its neighbours", op.type, op.name));
  const OpFamilyRules& family = rulesOf(*op.def);
  std::vector<int64_t> splits(rule.factorCount(), 0);
  if (auto e = family.readSplits(rule, op, strategy, splits)) return *e;
  for (int f = 0; f < rule.factorCount(); ++f) {
    if (splits[f] == 0) splits[f] = 1;
    if (rule.isReplicated(f) && splits[f] > 1)
      return err(fmt::format("{} '{}' cannot split {} ({}): it is {}; its strategy must be 1", op.type, op.name,
                             factorRole(rule, op, f), splits[f], family.replicatedWhy()));
  }
  if (auto e = family.checkSplits(rule, op, splits)) return *e;

  OpSharding s;
  std::vector<int64_t> dev;
  for (int f : rule.mindsporeOrder) dev.push_back(splits[f]);
  int64_t used = 1;
  for (int64_t d : dev) used *= d;
  if (deviceNum % used != 0)
    return err(fmt::format("{} '{}': the strategy uses {} devices, which does not divide device_num {}", op.type, op.name, used,
                           deviceNum));
  int64_t repeat = deviceNum / used;
  bool repeatLeft = family.repeatOnLeft(rule, splits);
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
  s.reduceScattered.assign(rule.results.size(), false);
  if (outStrategy) {
    if (auto e = family.checkOutStrategy(rule, op, splits, *outStrategy)) return *e;
    s.reduceScattered[0] = true;
  }
  return s;
}

ShardingResult shardingFromLayouts(const OpRule& rule, const OpView& op, const std::vector<DimAxes>& inLayouts,
                                   const DeviceMatrix& mesh, const std::optional<std::vector<DimAxes>>& outLayouts) {
  if (strategyFormOf(*op.def) == StrategyForm::FromNeighbours)
    return err(fmt::format("{} '{}' takes no layout: its layouts come from its neighbours", op.type, op.name));
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
          return err(
              fmt::format("{} '{}': device axis '{}' splits two different dims of the op", op.type, op.name, mesh.names[a]),
              static_cast<int>(k));
        axisFactor[a] = f;
      }
    }
  }
  for (int f = 0; f < rule.factorCount(); ++f)
    if (rule.isReplicated(f) && !s.factorAxes[f].empty())
      return err(fmt::format("{} '{}' cannot split {}: it is {}", op.type, op.name, factorRole(rule, op, f),
                             rulesOf(*op.def).replicatedWhy()));
  s.reduceScattered.assign(rule.results.size(), false);
  if (outLayouts) {
    for (size_t r = 0; r < outLayouts->size() && r < rule.results.size(); ++r) {
      TensorLayout want{mesh, op.resultShapes[r], (*outLayouts)[r], {}, ReduceOp::Sum};
      TensorLayout computed = resultLayout(rule, s, static_cast<int>(r), op.resultShapes[r]);
      if (want.sameAs(finalResultLayout(rule, s, static_cast<int>(r), op.resultShapes[r]))) continue;
      s.reduceScattered[r] = true;
      if (!want.sameAs(finalResultLayout(rule, s, static_cast<int>(r), op.resultShapes[r])))
        return err(fmt::format("{} '{}': out_layout {} is neither the computed output {} nor its reduce-scatter", op.type,
                               op.name, printAliasLayout(want), printAliasLayout(computed)));
    }
  }
  return s;
}

namespace {
TensorLayout layoutFor(const OpSharding& s, const DimFactors& dims, const Shape& shape) {
  TensorLayout l;
  l.mesh = s.mesh;
  l.shape = shape;
  l.dims.resize(dims.size());
  for (size_t d = 0; d < dims.size(); ++d)
    for (int f : dims[d]) l.dims[d].insert(l.dims[d].end(), s.factorAxes[f].begin(), s.factorAxes[f].end());
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

TensorLayout finalResultLayout(const OpRule& rule, const OpSharding& s, int result, const Shape& shape) {
  TensorLayout l = resultLayout(rule, s, result, shape);
  if (s.scatters(static_cast<size_t>(result)) && !l.dims.empty()) {
    // A reduce-scatter's group hands out its pieces in rank order: dim 0 takes the reduced axes
    // ascending after its own (a size-1 one too, as MindSpore's tensor map keeps it).
    std::vector<int> reduced;
    for (int f = 0; f < rule.factorCount(); ++f)
      if (rule.isReduction(f)) reduced.insert(reduced.end(), s.factorAxes[f].begin(), s.factorAxes[f].end());
    std::sort(reduced.begin(), reduced.end());
    l.dims[0].insert(l.dims[0].end(), reduced.begin(), reduced.end());
  }
  l.partialAxes.clear();
  l.partialOp = ReduceOp::Sum;
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
  reduce.step.mesh = s.mesh;
  reduce.step.axes = axes;
  reduce.step.reduceOp = rule.reduceOp;
  const OpFamilyRules& family = rulesOf(*op.def);
  bool scatter = s.scatters(0);
  reduce.step.kind = scatter ? RedistStep::Kind::ReduceScatter : RedistStep::Kind::AllReduce;
  reduce.reason = fmt::format("{} {} {} ways ({}): the output is partial{}", op.name, family.partialWhy(), groupSize, where,
                              scatter ? "; out_strategy asks for it reduce-scattered on dim 0" : "");
  ops.push_back(reduce);
  if (family.averagesPartials(*op.def)) {
    ForwardOp div;
    div.step.kind = RedistStep::Kind::RealDiv;
    div.step.mesh = s.mesh;
    div.step.axes = axes;
    div.step.divisor = groupSize;
    div.reason = fmt::format("{} averaged {} local means: divide their sum by {}", op.name, groupSize, groupSize);
    ops.push_back(div);
  }
  return ops;
}

IntTuple splitCounts(const DimFactors& dims, const OpSharding& s) {
  IntTuple t;
  for (const auto& factors : dims) {
    int64_t n = 1;
    for (int f : factors)
      for (int a : s.factorAxes[f]) n *= s.mesh.dims[a];
    t.push_back(n);
  }
  return t;
}

ShardStrategy strategyOf(const OpRule& rule, const OpSharding& s, const OpView& op) {
  return rulesOf(*op.def).strategyOf(rule, s);
}

ShardStrategy strategyOf(const Op& op) { return rulesOf(defOf(op)).strategyOf(*op.parallel->rule, op.parallel->sharding); }

std::vector<DimAxes> layoutMapsOf(const Op& op) { return layoutMapsOf(*op.parallel->rule, op.parallel->sharding); }

const ShardStrategy* outStrategyOf(const Op& op) {
  const OpAnnotation& annotation = *op.annotation;
  return op.parallel->hasSharding && annotation.outStrategy ? &*annotation.outStrategy : nullptr;
}

std::vector<DimAxes> layoutMapsOf(const OpRule& rule, const OpSharding& s) {
  std::vector<DimAxes> maps;
  for (size_t k = 0; k < rule.operands.size(); ++k)
    maps.push_back(layoutFor(s, rule.operands[k], Shape(rule.operands[k].size(), 1)).dims);
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
