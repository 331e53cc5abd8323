#include "passes/propagation/sharding_assignment.h"

#include <algorithm>

#include <fmt/format.h>

#include "passes/propagation/factor_sharding.h"
#include "ops/op_family.h"

namespace irc {

std::optional<OpSharding> configuredSharding(const Graph& graph, const Op& op, const OpRule& rule, const CompileOptions& options,
                                             DiagnosticEngine& diags, bool fullyUseDevices, bool& failed) {
  const OpAnnotation& a = *op.annotation;
  if (!a.configured()) return std::nullopt;
  OpView view = viewOf(graph, op);
  ShardingResult r = a.inStrategy ? shardingFromStrategy(rule, view, *a.inStrategy, options.deviceNum, a.outStrategy)
                                  : shardingFromLayouts(rule, view, *a.inLayout, *options.mesh, a.outLayout);
  SourceLoc loc = a.inStrategy ? a.inStrategyLoc : a.inLayoutLoc;
  if (auto* e = std::get_if<StrategyError>(&r)) {
    diags.error(loc, e->message);
    failed = true;
    return std::nullopt;
  }
  OpSharding s = std::get<OpSharding>(r);
  if (a.inStrategy && fullyUseDevices) {
    int64_t used = devicesUsed(rule, s);
    if (used != 1 && used != options.deviceNum) {
      diags.error(loc, fmt::format("{} '{}': the strategy uses {} of {} devices; with fully_use_devices (the default) a "
                                   "configured strategy must use all devices or one (set parallel.fully_use_devices: false "
                                   "to allow repeated calculation)",
                                   op.type, op.name, used, options.deviceNum));
      failed = true;
      return std::nullopt;
    }
  }
  return s;
}

OpSharding replicatedSharding(const OpRule& rule, int64_t deviceNum) {
  OpSharding s;
  s.mesh = DeviceMatrix::unnamed({deviceNum});
  s.factorAxes.assign(rule.factorCount(), {});
  s.reduceScattered.assign(rule.results.size(), false);
  return s;
}

OpSharding dataParallelSharding(const OpRule& rule, const OpView& op, int64_t deviceNum) {
  OpSharding s = replicatedSharding(rule, deviceNum);
  // The batch is dim 0 of the first operand of the op's full rank; where that dim broadcasts
  // (Where's mask (1, 1, T, T) before the scores), of the next such operand. A scalar or an
  // operand broadcast from the right (T5's `Div(1, Sqrt(var))`, a bias [H]) never decides.
  size_t rank = 0;
  for (const Shape& shape : op.operandShapes) rank = std::max(rank, shape.size());
  auto decides = [&](size_t i) {
    return i < op.operandShapes.size() && op.operandShapes[i].size() == rank && !rule.operands[i].empty() &&
           !rule.operands[i][0].empty();
  };
  size_t first = 0;
  while (first < rule.operands.size() && !decides(first)) ++first;
  if (first == rule.operands.size() || rule.operands[first].empty() || rule.operands[first][0].size() != 1) return s;
  int f = rule.operands[first][0][0];
  if (rule.isReplicated(f) || op.operandShapes[first][0] % deviceNum != 0 || deviceNum == 1) return s;
  // The family's batch operand (Gather's indices, not its table: which keeps the output whole).
  // A scalar one (`aten.select`'s index) has no batch: the table's dim 0 is the batch then, if
  // it passes through to the output.
  if (int k = rulesOf(*op.def).batchOperand(); k != 0) {
    if (rule.operands[k].empty()) {
      if (rule.isReduction(f)) return s;
    } else {
      if (op.operandShapes[k][0] % deviceNum != 0) return s;
      f = rule.operands[k][0][0];
    }
  }
  s.factorAxes[f] = {0};
  return s;
}

namespace {

// Axis `a` of the layout's mesh split into `major` x (size / major), the ranks unchanged: every
// reference to a later axis moves up one, and the dims holding `a` hold both halves.
void splitAxis(TensorLayout& l, int a, int64_t major) {
  int64_t minor = l.mesh.dims[a] / major;
  std::vector<int64_t> sizes = l.mesh.dims;
  sizes[a] = major;
  sizes.insert(sizes.begin() + a + 1, minor);
  std::vector<std::string> names = l.mesh.names;
  std::string name = a < static_cast<int>(names.size()) ? names[a] : fmt::format("axis_{}", a);
  if (names.size() == static_cast<size_t>(l.mesh.rank())) {
    names[a] = fmt::format("{}({}){}", name, 1, major);
    names.insert(names.begin() + a + 1, fmt::format("{}({}){}", name, major, minor));
  }
  l.mesh.dims = std::move(sizes);
  if (names.size() == l.mesh.dims.size()) l.mesh.names = std::move(names);
  else l.mesh.names = AxisNames::unnamed(l.mesh.dims.size());
  auto shift = [&](std::vector<int>& axes) {
    for (size_t k = 0; k < axes.size(); ++k) {
      if (axes[k] > a) ++axes[k];
      else if (axes[k] == a) axes.insert(axes.begin() + static_cast<std::ptrdiff_t>(++k), a + 1);
    }
  };
  for (auto& axes : l.dims) shift(axes);
  shift(l.partialAxes);
}

}  // namespace

TensorLayout splitAxesAtFactors(TensorLayout layout, const DimFactors& dims, const std::vector<int64_t>& factorSizes) {
  for (size_t d = 0; d < dims.size() && d < layout.dims.size(); ++d) {
    if (dims[d].empty()) continue;
    size_t factor = 0;
    int64_t left = factorSizes[dims[d][0]];
    for (size_t k = 0; k < layout.dims[d].size(); ++k) {
      int a = layout.dims[d][k];
      int64_t n = layout.mesh.dims[a];
      if (n == 1) continue;
      while (left == 1 && factor + 1 < dims[d].size()) left = factorSizes[dims[d][++factor]];
      if (left % n == 0) {
        left /= n;
      } else if (left > 1 && n % left == 0) {
        splitAxis(layout, a, left);  // this factor takes the major part, the next the rest
        left = 1;
      } else {
        break;  // neither divides the other: the projection stops here as before
      }
    }
  }
  return layout;
}

OpSharding shardingFromNeighbour(const OpRule& rule, int tensor, bool isResult, const TensorLayout& given) {
  const DimFactors& dims = isResult ? rule.results.at(tensor) : rule.operands.at(tensor);
  TensorLayout layout = splitAxesAtFactors(given, dims, rule.factorSizes);
  OpSharding s;
  s.mesh = layout.mesh;
  s.factorAxes.assign(rule.factorCount(), {});
  s.reduceScattered.assign(rule.results.size(), false);
  std::vector<bool> replicated(rule.factorCount());
  for (int f = 0; f < rule.factorCount(); ++f) replicated[f] = rule.isReplicated(f);
  // Shardy's projection (the one factor propagation uses too): a layout that needs a sub-axis
  // or splits a replicated factor stops there.
  for (size_t d = 0; d < dims.size() && d < layout.dims.size(); ++d) {
    auto perFactor = projectDim(dims[d], rule.factorSizes, layout.dims[d], layout.mesh.dims, &replicated);
    for (size_t i = 0; i < dims[d].size(); ++i) s.factorAxes[dims[d][i]] = perFactor[i];
  }
  enforceCompoundOrder(rule, s);
  return s;
}

void assignSharding(Op& op, OpSharding sharding, StrategyOrigin origin) {
  OpParallelState& p = *op.parallel;
  p.sharding = std::move(sharding);
  p.origin = std::move(origin);
  p.hasSharding = true;
}

}  // namespace irc
