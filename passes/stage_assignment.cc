#include "passes/stage_assignment.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cost/stage_estimate.h"
#include "cost/step_cost.h"
#include "ops/op_family.h"
#include "ops/op_sharding.h"
#include "plan/plan_queries.h"
#include "passes/redistribution.h"

namespace irc {
namespace {

// What one model op adds to its stage: its time (and its input edges', cost/step_cost.h), the
// bytes it holds for the whole step (its parameters, in training their gradients and optimizer
// states) and the bytes one micro-batch keeps for its backward.
struct OpLoad {
  double seconds = 0;
  double resident = 0;
  double savedPerMicroBatch = 0;
};

std::vector<OpLoad> loadsOf(const Graph& g, const CompileOptions& o) {
  std::vector<double> seconds = opStepSeconds(g, o);
  std::vector<OpLoad> loads(g.ops.size());
  std::vector<bool> read(g.values.size(), false);
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    if (op.inserted() || !op.parallel->layoutsInferred || !op.parallel->hasSharding || !op.parallel->rule) continue;
    OpLoad& load = loads[id];
    load.seconds = seconds[id];
    SavedForBackward saved = o.training ? rulesOf(op).savedForBackward(op) : SavedForBackward{};
    std::vector<int> kept = saved.operandsKeptWhenAllTrain();
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].isValue()) continue;
      ValueId v = op.operands[i].value;
      const Value& value = g.value(v);
      double bytes = sliceBytes(layoutNeeded(op, static_cast<int>(i)), value.type.dtype);
      bool param = value.kind == ValueKind::Parameter;
      if (param && isFloat(value.type.dtype) && !read[v])
        load.resident += value.trainable ? parameterStepBytes(bytes, value.type.dtype, o) : bytes;
      read[v] = true;
      if (!param && std::count(kept.begin(), kept.end(), static_cast<int>(i)) > 0) load.savedPerMicroBatch += bytes;
    }
    for (int r : saved.results)
      if (r < static_cast<int>(op.results.size()))
        load.savedPerMicroBatch += sliceBytes(op.parallel->outputLayouts[r], g.value(op.results[r]).type.dtype);
  }
  return loads;
}

// The cut of `ops` (in order) into at most P * v runs (virtual stages) each within `limit`
// seconds and the budget; returns each op's virtual stage, or empty when more runs are needed.
// With virtual stages the budget is checked per run, not per stage (a stage holds v runs): an
// approximation the compiled plan's memory estimate corrects.
std::vector<int32_t> greedyCut(const std::vector<OpId>& ops, const std::vector<OpLoad>& loads, double limit,
                               const CompileOptions& o) {
  const int64_t runs = o.pipelineStages * o.virtualStages;
  std::vector<int32_t> stage(ops.size(), 0);
  int32_t s = 0;
  double seconds = 0, resident = 0, saved = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpLoad& l = loads[ops[i]];
    auto fits = [&](int32_t at, double t, double r, double sv) {
      return t <= limit && (o.memoryBudget <= 0 || r + inFlightMicroBatches(at % o.pipelineStages, o) * sv <= o.memoryBudget);
    };
    if (i > 0 && !fits(s, seconds + l.seconds, resident + l.resident, saved + l.savedPerMicroBatch)) {
      ++s;
      seconds = resident = saved = 0;
      if (s >= runs) return {};
    }
    if (!fits(s, l.seconds, l.resident, l.savedPerMicroBatch) && seconds == 0) return {};
    seconds += l.seconds;
    resident += l.resident;
    saved += l.savedPerMicroBatch;
    stage[i] = s;
  }
  // Fewer runs than stages: split the last runs (a later stage holds fewer micro-batches, so
  // moving ops later keeps the memory within the budget and no stage gets slower).
  int32_t used = s + 1;
  for (size_t i = ops.size(); used < runs && i-- > 1;) {
    if (stage[i] != stage[i - 1]) continue;
    for (size_t j = i; j < ops.size(); ++j) ++stage[j];
    ++used;
  }
  if (used < runs) return {};
  return stage;
}

// `stages: auto`: the split of the execution order into pipeline_stages contiguous runs that
// minimises the slowest stage's estimated time (cost/step_cost.h) with every stage's 1F1B
// memory within the budget, if any. Exact for the order given (a binary search on the slowest
// stage's time with a greedy cut, which is optimal for contiguous splits). Needs layouts.
void assignAutoStages(Graph& graph, const CompileOptions& options) {
  std::vector<OpLoad> loads = loadsOf(graph, options);
  std::vector<OpId> ops;
  double total = 0, largest = 0;
  for (OpId id : graph.order)
    if (!graph.op(id).inserted()) {
      ops.push_back(id);
      total += loads[id].seconds;
      largest = std::max(largest, loads[id].seconds);
    }
  // The smallest limit on the slowest stage for which the greedy cut fits: bisection between the
  // largest op and the whole step.
  double lo = largest, hi = std::max(total, largest);
  std::vector<int32_t> best = greedyCut(ops, loads, hi, options);
  if (best.empty()) {
    // The budget does not fit with any balance: cut by time alone (the report shows the memory).
    CompileOptions free = options;
    free.memoryBudget = 0;
    best = greedyCut(ops, loads, hi, free);
  } else {
    for (int i = 0; i < 100 && hi - lo > 1e-12 * std::max(hi, 1e-300); ++i) {
      double mid = (lo + hi) / 2;
      std::vector<int32_t> cut = greedyCut(ops, loads, mid, options);
      if (cut.empty()) lo = mid;
      else {
        hi = mid;
        best = std::move(cut);
      }
    }
  }
  for (size_t i = 0; i < ops.size() && !best.empty(); ++i) {
    graph.op(ops[i]).stage = static_cast<int32_t>(best[i] % options.pipelineStages);
    graph.op(ops[i]).chunk = static_cast<int32_t>(best[i] / options.pipelineStages);
  }
}

// The first all-digit part of a module path (`model.layers.3.mlp` -> 3); -1 without one.
int64_t layerOf(const std::string& module) {
  size_t start = 0;
  while (start < module.size()) {
    size_t end = module.find('.', start);
    if (end == std::string::npos) end = module.size();
    if (end > start && std::all_of(module.begin() + start, module.begin() + end, [](char c) { return c >= '0' && c <= '9'; }))
      return std::stoll(module.substr(start, std::min<size_t>(end - start, 18)));
    start = end + 1;
  }
  return -1;
}

// `recompute_layers`: on each stage the first so many of its layers (an op's layer: the first
// number among its module path's parts, `model.layers.3.mlp` -> 3) run their forward again before
// their backward. The error, naming the stage, when a stage has fewer layers than its count.
std::optional<std::string> applyRecomputeLayers(Graph& graph, const ParallelSettings& settings) {
  const int64_t P = std::max<int64_t>(1, settings.pipelineStages);
  if (settings.recomputeLayers.empty()) return std::nullopt;
  std::vector<std::vector<int64_t>> layers(P);  // each stage's layers, in order
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    const int64_t layer = op.inserted() ? -1 : layerOf(graph.moduleOf(op));
    if (layer < 0) continue;
    auto& mine = layers[std::clamp<int64_t>(op.stage, 0, P - 1)];
    if (std::find(mine.begin(), mine.end(), layer) == mine.end()) mine.push_back(layer);
  }
  std::vector<std::vector<bool>> recomputed(P);
  for (int64_t s = 0; s < P; ++s) {
    const int64_t count = settings.recomputeLayers[static_cast<size_t>(s) % settings.recomputeLayers.size()];
    std::sort(layers[s].begin(), layers[s].end());
    if (count > static_cast<int64_t>(layers[s].size()))
      return fmt::format(
          "recompute_layers asks stage {} for {} layer{}; it has {} (an op's layer is the number in its module "
          "path, model.layers.N)",
          s, count, count == 1 ? "" : "s", layers[s].size());
    layers[s].resize(static_cast<size_t>(count));
  }
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    const int64_t layer = op.inserted() ? -1 : layerOf(graph.moduleOf(op));
    const auto& chosen = layers[std::clamp<int64_t>(op.stage, 0, P - 1)];
    if (layer >= 0 && std::find(chosen.begin(), chosen.end(), layer) != chosen.end()) op.annotation->recompute = true;
  }
  return std::nullopt;
}

}  // namespace

std::unique_ptr<Pass> createStageAssignmentPass(const CompileOptions& options) {
  // A step of redistribution's stage: `stages: auto` from the layouts' costs, and
  // `recompute_layers` on the stages.
  return makePass({"stage_assignment", "", {GraphFact::Layouts}, {}}, [options](Graph& graph, PassContext& context) {
    const bool autoStages = options.pipelineStages > 1 && options.autoStages;
    if (!autoStages && options.recomputeLayers.empty()) return PassStatus::Unchanged;
    if (!readyForRedistribution(graph, context)) return PassStatus::Failed;
    // Each op's stage changes, not the graph's structure.
    if (autoStages) assignAutoStages(graph, options);
    // Then `recompute_layers`: each stage's first layers, once the stages are known.
    if (auto error = applyRecomputeLayers(graph, options)) {
      context.diags.error(SourceLoc{}, *error);
      return PassStatus::Failed;
    }
    return PassStatus::Annotated;
  });
}

}  // namespace irc
