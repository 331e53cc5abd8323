#include "passes/step_cost.h"

#include <algorithm>
#include <unordered_map>

#include "ir/inserted_ops.h"
#include "passes/layout_inference.h"
#include "passes/optimal_planner.h"
#include "passes/propagation_common.h"
#include "passes/redistribution_planner.h"

namespace irc {
namespace {

int64_t splitOf(const OpSharding& s, int factor) {
  int64_t n = 1;
  for (int axis : s.factorAxes[factor]) n *= s.mesh.dims[axis];
  return n;
}

// The tensors (operands) a factor appears in.
int operandsHolding(const OpRule& rule, int factor) {
  int n = 0;
  for (const DimFactors& dims : rule.operands)
    if (std::any_of(dims.begin(), dims.end(), [&](const std::vector<int>& fs) { return std::count(fs.begin(), fs.end(), factor) > 0; }))
      ++n;
  return n;
}

}  // namespace

double computeTime(const OpRule& rule, const OpSharding& s, const OpView& view, DType dtype, const CostModel& model) {
  double points = 1;
  bool contraction = false;
  for (int f = 0; f < rule.factorCount(); ++f) {
    bool spans = !rule.isReduction(f) || operandsHolding(rule, f) >= 2;
    if (rule.isReduction(f) && spans) contraction = true;
    if (spans) points *= static_cast<double>(rule.factorSizes[f]) / static_cast<double>(splitOf(s, f));
  }
  double flops = (contraction ? 2 : 1) * points;
  double bytes = 0;
  for (size_t i = 0; i < view.operandShapes.size() && i < rule.operands.size(); ++i)
    bytes += sliceBytes(operandLayout(rule, s, static_cast<int>(i), view.operandShapes[i]), dtype);
  for (size_t r = 0; r < view.resultShapes.size() && r < rule.results.size(); ++r)
    bytes += sliceBytes(resultLayout(rule, s, static_cast<int>(r), view.resultShapes[r]), dtype);
  return std::max(flops / model.peakFlops, bytes / model.memoryBandwidth);
}

OpTime opTime(const OpRule& rule, const OpSharding& s, const OpView& view, DType dtype, const std::vector<bool>& firstReader,
              const ParallelSettings& settings) {
  const CostModel& m = settings.costModel;
  OpTime t;
  t.compute = computeTime(rule, s, view, dtype, m);
  if (!view.resultShapes.empty() && !rule.results.empty()) {
    double bytes = sliceBytes(resultLayout(rule, s, 0, view.resultShapes[0]), dtype);
    for (const ForwardOp& f : forwardOps(rule, s, view)) {
      double n = 1;
      for (int axis : f.axes) n *= static_cast<double>(s.mesh.dims[axis]);
      switch (f.kind) {
        case ForwardOp::Kind::AllReduce: t.forwardComm += allReduceTime(bytes, n, m); break;
        case ForwardOp::Kind::ReduceScatter:
          t.forwardComm += n <= 1 ? 0 : (n - 1) * m.alpha + (n - 1) / n * bytes * m.beta + bytes * m.gamma;
          break;
        case ForwardOp::Kind::RealDiv: t.forwardComm += bytes / n * m.gamma; break;
      }
    }
  }
  if (settings.training)
    for (size_t i = 0; i < firstReader.size() && i < view.operandShapes.size(); ++i) {
      if (!firstReader[i]) continue;
      TensorLayout held = operandLayout(rule, s, static_cast<int>(i), view.operandShapes[i]);
      // Ranks holding the same slice: all of them over the number of distinct slices.
      double replicas = static_cast<double>(settings.deviceNum) * static_cast<double>(numElements(held.sliceShape())) /
                        static_cast<double>(std::max<int64_t>(1, numElements(view.operandShapes[i])));
      t.gradientSync += allReduceTime(sliceBytes(held, dtype), replicas, m);
    }
  return t;
}

double redistributionTime(const TensorLayout& from, const TensorLayout& to, DType dtype, const ParallelSettings& settings) {
  PlannerOptions options{settings.enableAlltoall, byteSize(dtype)};
  RedistPlan plan = settings.redistribution == RedistributionMode::Optimal ? planOptimal(from, to, options, settings.costModel)
                                                                          : planRedistribution(from, to, options);
  return planTime(plan, byteSize(dtype), settings.costModel);
}

void addOpTime(StepTime& t, const OpTime& op, bool training) {
  t.compute += op.compute;
  t.forwardComm += op.forwardComm;
  if (!training) return;
  t.backward += 2 * op.compute + op.forwardComm;
  t.gradientSync += op.gradientSync;
}

void addRedistributionTime(StepTime& t, double seconds, bool training) {
  t.redistribution += seconds;
  if (training) t.backward += seconds;
}

namespace {

// Calls `take(op, its terms)` for every model op with its own time and its input edges'.
template <typename Take>
void walkOpTimes(const Graph& graph, const ParallelSettings& settings, Take take) {
  // Layers repeat: an edge's plan is planned once per pair of layouts.
  std::unordered_map<IntKey, double, IntKeyHash> planned;
  auto redistribution = [&](const TensorLayout& from, const TensorLayout& to, DType dtype) {
    if (from == to) return 0.0;
    IntKey key{static_cast<int64_t>(dtype)};
    appendLayoutKey(key, from);
    appendLayoutKey(key, to);
    auto it = planned.find(key);
    if (it == planned.end()) it = planned.emplace(std::move(key), redistributionTime(from, to, dtype, settings)).first;
    return it->second;
  };
  std::vector<bool> read(graph.values.size(), false);
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() || !op.parallel->layoutsInferred || !op.parallel->hasSharding || !op.parallel->rule) continue;
    StepTime t;
    std::vector<bool> firstReader;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].isValue()) continue;
      ValueId v = modelValueBehind(graph, op.operands[i].value);
      const Value& value = graph.value(v);
      firstReader.push_back(value.kind == ValueKind::Parameter && isFloat(value.type.dtype) && !read[v]);
      read[v] = true;
      addRedistributionTime(t, redistribution(layoutOfValue(graph, v), layoutNeeded(op, static_cast<int>(i)), value.type.dtype),
                            settings.training);
    }
    DType dtype = graph.value(op.results[0]).type.dtype;
    addOpTime(t, opTime(*op.parallel->rule, op.parallel->sharding, viewOf(graph, op), dtype, firstReader, settings), settings.training);
    take(op, t);
  }
}

void add(StepTime& sum, const StepTime& t) {
  sum.compute += t.compute;
  sum.forwardComm += t.forwardComm;
  sum.redistribution += t.redistribution;
  sum.backward += t.backward;
  sum.gradientSync += t.gradientSync;
}

}  // namespace

StepTime estimateStepTime(const Graph& graph, const ParallelSettings& settings) {
  StepTime sum;
  walkOpTimes(graph, settings, [&](const Op&, const StepTime& t) { add(sum, t); });
  return sum;
}

std::vector<double> opStepSeconds(const Graph& graph, const ParallelSettings& settings) {
  std::vector<double> seconds(graph.ops.size(), 0);
  walkOpTimes(graph, settings, [&](const Op& op, const StepTime& t) { seconds[&op - graph.ops.data()] = t.total(); });
  return seconds;
}

}  // namespace irc
