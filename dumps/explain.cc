#include "dumps/explain.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/parallel_config.h"
#include "plan/search_summary.h"
#include "dumps/ir_printer.h"
#include "dumps/origin_text.h"
#include "ops/inserted_ops.h"
#include "cost/step_cost.h"
#include "ir/layout_notation.h"
#include "ops/collective.h"
#include "ops/op_defs.h"
#include "ops/op_sharding.h"

namespace irc {
namespace {

std::string layoutLine(const TensorLayout& l) {
  std::string text = fmt::format("tensor map {} on device matrix {}, slice {}", printTensorMapIndex(l), formatShape(l.mesh.dims),
                                 formatShape(l.sliceShape()));
  if (l.isPartial()) {
    std::vector<int> axes = l.partialFromRight();
    text += fmt::format(", partial ({}) over device axes {}", reduceOpName(l.partialOp), fmt::join(axes, ", "));
  }
  if (auto placements = placementsOf(l)) text += fmt::format(", placements [{}]", fmt::join(*placements, ", "));
  return text;
}

// Why search_mode auto chose the strategy: its own time, and what each runner-up would add to
// the step with every other op kept.
std::string searchedLines(const Graph& graph, const Op& op) {
  std::string out = fmt::format(
      "  origin: searched (search_mode auto): {} s of the step's estimate is this op's own "
      "(compute, forward ops, gradient sync)\n",
      formatNumber(op.parallel->origin.cost));
  OpId id = static_cast<OpId>(&op - graph.ops.data());
  if (!graph.search || id >= static_cast<OpId>(graph.search->classOf.size()) || graph.search->classOf[id] < 0) return out;
  const SearchClass& c = graph.search->classes[graph.search->classOf[id]];
  if (c.ops.size() > 1)
    out += fmt::format("  shares its choice with {} more op{} of the repeated layers\n", c.ops.size() - 1,
                       c.ops.size() == 2 ? "" : "s");
  if (c.runnersUp.empty()) out += fmt::format("  it had no other candidate ({} considered)\n", c.candidates);
  std::string where = c.ops.size() > 1 ? fmt::format(" in all {} of them", c.ops.size()) : "";
  for (const SearchAlternative& a : c.runnersUp)
    out += fmt::format("  instead {}{}: the step would take {} s {}\n", formatStrategy(a.strategy), where,
                       formatNumber(std::abs(a.deltaSeconds)), a.deltaSeconds >= 0 ? "longer" : "less");
  return out;
}

// Why the alternative lost, in MindSpore's order of criteria (spec §5.5).
std::string lostOnText(const StrategyOrigin& o) {
  auto figures = [&](const char* unit) {
    return fmt::format("{}{} against {}{}", formatNumber(o.lostOnNextBest), unit, formatNumber(o.lostOnBest), unit);
  };
  switch (o.lostOn) {
    case StrategyOrigin::LostOn::Unknown: return "";
    case StrategyOrigin::LostOn::EdgeCommunication: return "; it lost on the edge's communication (" + figures(" bytes") + ")";
    case StrategyOrigin::LostOn::EdgeComputation: return "; it lost on the edge's computation cost (" + figures("") + ")";
    case StrategyOrigin::LostOn::ForwardCommunication:
      return "; the edge costs tie, it lost on its own forward communication (" + figures(" bytes") + ")";
    case StrategyOrigin::LostOn::Partitions:
      return "; the costs tie, and MindSpore prefers more partitions (" + figures("") + ")";
    case StrategyOrigin::LostOn::Order: return "; everything ties, it lost on the strategies' order";
  }
  return "";
}

std::string originLines(const Graph& graph, const Op& op) {
  const StrategyOrigin& o = op.parallel->origin;
  std::string from = originSourceName(graph, o), edge = originEdgeText(graph, op, o);
  switch (o.kind) {
    case OriginKind::User:
      if (o.meshOfOperand >= 0)
        return fmt::format(
            "  origin: configured in the model (user), its splits laid on the device matrix input {} arrives in, not in its "
            "dims' order (docs/deviations.md)\n",
            o.meshOfOperand);
      return "  origin: configured in the model (user)\n";
    case OriginKind::Searched: return searchedLines(graph, op);
    case OriginKind::Default:
      return "  origin: default — no configured op or annotated tensor reaches it (data parallel, or replicated in semi_auto)\n";
    case OriginKind::Tensor:
    case OriginKind::Propagated: {
      std::string out =
          fmt::format("  origin: {} from {}", o.kind == OriginKind::Tensor ? "fixed by the sharding of" : "propagated", from);
      if (!edge.empty()) out += fmt::format(" over edge {}, redistribution cost {}", edge, formatNumber(o.cost));
      out += "\n";
      if (o.hasNextBest)
        out += fmt::format("  best losing alternative: {} at cost {}{}\n", formatStrategy(o.nextBest),
                           formatNumber(o.nextBestCost), lostOnText(o));
      return out;
    }
  }
  return "";
}

std::string explainModelOp(const Graph& graph, OpId id) {
  const Op& op = graph.op(id);
  const OpParallelState& p = *op.parallel;
  std::string out = fmt::format("{} ({}), model op at {}\n", op.name, op.type, formatLoc(op.loc));
  if (const std::string& module = graph.moduleOf(op); !module.empty()) out += fmt::format("  module: {}\n", module);
  if (graph.stageDevices > 0)
    out += fmt::format("  pipeline stage: {} (ranks {} .. {}){}\n", op.stage, op.stage * graph.stageDevices,
                       (op.stage + 1) * graph.stageDevices - 1,
                       op.chunk > 0 ? fmt::format(", its model chunk {}", op.chunk) : std::string());
  if (!p.hasSharding) return out + "  no strategy (the strategy propagation pass did not run)\n";
  if (takesLayoutsFromNeighbours(op)) out += "  strategy: none (a Reshape takes its layouts from its neighbours)\n";
  else out += fmt::format("  strategy: {}\n", formatStrategy(strategyOf(op)));
  out += originLines(graph, op);
  if (!p.layoutsInferred) return out;
  out += fmt::format("  device matrix: {}\n", formatShape(p.sharding.mesh.dims));
  int k = 0;
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Operand& o = op.operands[i];
    if (!o.isValue()) continue;
    // Name the value as the model does, also where a redistribution now feeds the op.
    std::string valueName = graph.value(o.value).name;
    for (const RedistributionRecord& rec : graph.redistributions)
      if (rec.consumer == op.name && rec.inputIndex == static_cast<int>(i))
        valueName = graph.value(rec.value).name + ", redistributed";
    out += fmt::format("  input {} ({}): {}\n", k, valueName, layoutLine(p.inputLayouts[k]));
    ++k;
  }
  for (size_t r = 0; r < p.outputLayouts.size(); ++r) {
    out += fmt::format("  output {}: computed as {}\n", r, layoutLine(p.outputLayouts[r]));
    const TensorLayout& seen = *graph.value(op.results[r]).layout;
    if (!seen.sameAs(p.outputLayouts[r])) out += fmt::format("            consumers see {}\n", layoutLine(seen));
  }
  std::vector<std::string> forward;
  OpId self = id;
  for (OpId id : graph.order) {
    const Op& other = graph.op(id);
    if (other.owner == self && other.role == InsertedRole::ForwardOp)
      forward.push_back(fmt::format("{} {}", other.name, other.type));
  }
  out += forward.empty() ? "  forward ops: none\n" : fmt::format("  forward ops: {}\n", fmt::join(forward, ", "));
  for (const RedistributionRecord& rec : graph.redistributions)
    if (rec.consumer == op.name)
      out += fmt::format("  input {} is redistributed from {} ({} ops): {}\n", rec.inputIndex, rec.producer, rec.ops.size(),
                         rec.reason);
  return out;
}

std::string explainInserted(const Graph& graph, OpId id, int64_t rank, const ParallelSettings* settings) {
  const Op& op = graph.op(id);
  const OpForRank view(graph, op, rank);
  std::string out = fmt::format("{} = {} (inserted)\n", op.name, op.type);
  if (!op.reason.empty()) out += fmt::format("  why: {}\n", op.reason);
  for (const RedistributionRecord& rec : graph.redistributions) {
    auto pos = std::find(rec.ops.begin(), rec.ops.end(), id);
    if (pos == rec.ops.end()) continue;
    out += fmt::format("  edge: {} -> {} (input {}), step {} of {}\n", rec.producer, rec.consumer, rec.inputIndex,
                       pos - rec.ops.begin() + 1, rec.ops.size());
    out += fmt::format("  the producer gives: {}\n", layoutLine(rec.from));
    out += fmt::format("  the consumer needs: {}\n", layoutLine(rec.to));
  }
  if (op.role == InsertedRole::ForwardOp)
    out += fmt::format("  a forward op of {}: it completes that op's output for all its consumers\n", graph.op(op.owner).name);
  if (op.step) {
    const RedistStep& s = *op.step;
    out += fmt::format("  local shape: {} -> {}\n", formatShape(s.localBefore), formatShape(s.localAfter));
    if (view.attrs().count("group_ranks"))
      out += fmt::format("  rank {}'s group: {} ({})\n", rank, std::get<std::string>(view.attrs().at("group_ranks")),
                         std::get<std::string>(view.attrs().at("group")));
    if (familyOf(op) == OpFamily::StridedSlice)
      out += fmt::format("  rank {} keeps {} .. {}\n", rank, formatAttribute(*view.operands()[1].constant),
                         formatAttribute(*view.operands()[2].constant));
    int dtypeBytes = byteSize(graph.value(op.results[0]).type.dtype);
    if (isMirror(s))
      out += fmt::format("  forward: the identity; backward: {} (mean) of the gradient, {} bytes sent per rank\n",
                         collectiveName(mirrorGradientCollective(s)), formatNumber(mirrorGradientBytes(s, dtypeBytes)));
    else if (opTypeOfStep(s) == op.type)
      out += fmt::format("  bytes sent per rank: {}\n", formatNumber(stepSendBytes(s, dtypeBytes)));
    if (settings && !isMirror(s))
      if (auto timed = stepOnCluster(s, graph.value(op.results[0]).type.dtype, *settings))
        out += fmt::format("  time on {}: {:.4g} s over {}\n",
                           settings->cluster->preset.empty() ? "the cluster" : settings->cluster->preset, timed->seconds,
                           timed->link);
  }
  return out;
}

}  // namespace

std::optional<std::string> explainOp(const Graph& graph, const std::string& name, int64_t rank,
                                     const ParallelSettings* settings) {
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.name != name && op.instanceName != name) continue;
    return op.inserted() ? explainInserted(graph, id, rank, settings) : explainModelOp(graph, id);
  }
  return std::nullopt;
}

namespace {

std::string configurationRow(const SearchConfiguration& c) {
  std::string stages;
  for (size_t s = 0; s < c.stageLayers.size(); ++s) stages += (s ? "," : "") + std::to_string(c.stageLayers[s]);
  std::string optimizer = c.zeroStage > 0        ? fmt::format("ZeRO-{}", c.zeroStage)
                          : c.optimizerLevel > 0 ? fmt::format("opt. parallel {}", c.optimizerLevel)
                                                 : "unsharded";
  return fmt::format(
      "  DP {:>4} x TP {:>2} x PP {:>3}{}{}{}{}  micro-batch {} x {:<4} recompute {:<9} optimizer {:<15}  "
      "{:8.4g} s  {:6.1f} TFLOP/s  peak {:6.1f} GiB  ({})\n      layers per stage: {}; {}\n",
      c.dims.dp, c.dims.tp, c.dims.pp, c.dims.cp > 1 ? fmt::format(" x CP {}", c.dims.cp) : "",
      c.dims.v > 1                          ? fmt::format(" (v {})", c.dims.v)
      : c.pipelineSchedule == "zero_bubble" ? " (ZB)"
                                            : "",
      c.dims.ep > 1 || c.dims.etp > 1
          ? fmt::format(" EP {}{}", c.dims.ep, c.dims.etp > 1 ? fmt::format(" ETP {}", c.dims.etp) : "")
          : "",
      c.dims.sp ? " +SP" : "    ", c.microBatchSize, c.microBatches, c.recompute, optimizer, c.stepSeconds, c.tflopsPerDevice,
      c.peakBytes / (1024.0 * 1024 * 1024), c.compiled ? "compiled" : "layer model", stages, c.verdict);
}

}  // namespace

std::string explainSearchText(const SearchSummary& s) {
  if (!s.configuration)
    return fmt::format(
        "operator-level search: {} plan, estimated step {:.4g} s (proven bound {:.4g} s, gap {:.2g}); {} ops "
        "searched in {} classes, {} kept as configured; {} columns, {} rows{}\n",
        s.status, s.objective, s.bound, s.gap, s.searchedOps, s.classes.size(), s.fixedOps, s.columns, s.rows,
        s.memoryBudget > 0
            ? fmt::format("; peak {:.3g} GiB within {:.3g} GiB after {} round(s)", s.estimatedPeak / (1024.0 * 1024 * 1024),
                          s.memoryBudget / (1024.0 * 1024 * 1024), s.memoryRounds)
            : "");
  const ConfigurationSearch& c = *s.configuration;
  std::string out = fmt::format(
      "structural search over {} repeated layers: {} configurations (DP x TP x PP x CP, expert parallelism, virtual "
      "stages or the zero-bubble schedule, micro-batch size, recompute, optimizer level, sequence parallelism), {} dropped by "
      "the memory lower bound, {} "
      "layer models compiled, {} plans compiled whole\n",
      c.layers, c.considered, c.prunedByMemory, c.probes, c.compiledPlans);
  if (!c.given.empty()) out += fmt::format("kept as the model gives them: {}\n", fmt::join(c.given, ", "));
  out += "chosen:\n" + configurationRow(c.chosen);
  if (!c.alternatives.empty()) out += "the fastest others by the estimate:\n";
  for (const SearchConfiguration& a : c.alternatives) out += configurationRow(a);
  return out;
}

}  // namespace irc
