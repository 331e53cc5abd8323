// `irc memory MODEL [--rank R] [--plot FILE.svg] [--training] [--optimizer O] [--memory-budget S]`:
// will it fit, as a table (docs/memory.md).
#include <map>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dumps/dump_writer.h"
#include "dumps/memory_plot.h"
#include "dumps/report.h"
#include "ir/byte_size.h"
#include "ir/suggest.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"
#include "cli/cli_util.h"
#include "cli/command_specs.h"
#include "cli/commands.h"
#include "cli/timeline_outputs.h"

namespace irc::cli {
namespace {

std::string row(const std::string& what, double bytes, const std::string& note = "") {
  std::string line = fmt::format("  {:<24}{:>16}  {:<10}  {}", what, formatNumber(bytes), formatBytes(bytes), note);
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

// `--all-ranks`: every rank's peaks, a line each. Ranks of one pipeline stage hold the same
// shapes (irc's SPMD), so each stage is estimated once.
std::string allRanksTable(const Graph& graph, const CompileOptions& options) {
  std::string out = fmt::format("irc memory: {}, every rank of {}\n", graph.name, options.rankCount());
  out += fmt::format("  {:>6}  {:>5}  {:>12}  {:>14}{}\n", "rank", "stage", "inference", "training step",
                     options.memoryBudget > 0 ? "  within budget" : "");
  std::map<int64_t, MemoryEstimate> byStage;
  for (int64_t r = 0; r < options.rankCount(); ++r) {
    int64_t stage = graph.stageDevices > 0 ? r / graph.stageDevices : 0;
    auto it = byStage.find(stage);
    if (it == byStage.end()) it = byStage.emplace(stage, *memoryOf(graph, options, r)).first;
    const MemoryEstimate& m = it->second;
    double peak = m.training ? m.training->peakBytes : m.inference.peakBytes;
    out += fmt::format("  {:>6}  {:>5}  {:>12}  {:>14}{}\n", r, stage, formatBytes(m.inference.peakBytes),
                       m.training ? formatBytes(m.training->peakBytes) : std::string("-"),
                       options.memoryBudget > 0 ? (peak <= options.memoryBudget ? "  yes" : "  NO") : "");
  }
  // Each stage's training peak as the terms that add up to it (the in-flight micro-batches
  // differ by stage under 1F1B).
  if (graph.stageDevices > 0 && options.training) {
    out += "  the training peak's terms, per stage (they add up to it):\n";
    for (const auto& [stage, m] : byStage) {
      if (!m.training) continue;
      std::vector<std::string> terms;
      for (const PeakTerm& t : peakTerms(*m.training)) terms.push_back(fmt::format("{} {}", t.name, formatBytes(t.bytes)));
      out += fmt::format("  {:>6}  {} = {}\n", fmt::format("stage {}", stage), formatBytes(m.training->peakBytes),
                         fmt::format("{}", fmt::join(terms, " + ")));
    }
  }
  return out;
}

std::string memoryTable(const MemoryEstimate& m, const Graph& graph, const CompileOptions& options, int64_t rank) {
  std::string out = graph.stageDevices > 0
                        ? fmt::format("irc memory: {}, rank {} of {} (pipeline stage {}: its ranks hold the same shapes)\n",
                                      graph.name, rank, options.rankCount(), rank / graph.stageDevices)
                        : fmt::format("irc memory: {}, rank {} of {} (every rank holds the same shapes)\n", graph.name, rank,
                                      options.rankCount());
  out += fmt::format("  {:<24}{:>16}\n", "inference", "bytes");
  out += row("peak", m.inference.peakBytes, "at " + m.inference.peakAt);
  out += row("parameters", m.inference.parameterBytes);
  if (m.inference.constantBytes > 0) out += row("constants", m.inference.constantBytes, "held, not trained: masks, buffers");
  out += row("activations", m.inference.activationBytes, "live at the peak");
  out += row("communication results", m.inference.communicationBytes, "live at the peak");
  if (m.training) {
    const TrainingMemory& t = *m.training;
    out += fmt::format("  {:<24}{:>16}\n", fmt::format("training step ({})", optimizerName(t.optimizer)), "bytes");
    auto where = [](const std::string& phase, const std::string& at) { return phase + (at.empty() ? "" : ", at " + at); };
    out += row("peak", t.peakBytes, "from the second step on: in the " + where(t.peakPhase, t.peakAt));
    out += row("first step's peak", t.firstStepPeakBytes,
               "no optimizer state before its update: in the " + where(t.firstStepPeakPhase, t.firstStepPeakAt));
    out += "    the peak's terms, adding up to it:\n";
    for (const PeakTerm& term : peakTerms(t)) out += row("  " + term.name, term.bytes, term.note);
    out += row("resident", t.residentBytes, "what each step starts with (the rows marked *)");
    out += row("  parameters *", t.parameterBytes);
    if (t.constantBytes > 0) out += row("  constants *", t.constantBytes, "held, not trained: masks, buffers");
    out += row(t.gradientsResident ? "  gradients *" : "  gradients", t.gradientBytes,
               t.gradientBuffer == GradientBuffer::Persistent ? "a persistent buffer"
               : t.gradientsResident                          ? "accumulated over micro-batches, freed after the update"
                                                              : "made in backward, freed after the update");
    out += row("  optimizer states *", t.optimizerStateBytes);
    if (t.masterWeightBytes > 0) out += row("  master weights *", t.masterWeightBytes, "float32 copies the optimizer updates");
    if (t.optimizerTemporaryBytes > 0)
      out += row("  optimizer temporaries", t.optimizerTemporaryBytes,
                 fmt::format("during the update ({} kernels)", optimizerKernelsName(t.optimizerKernels)));
    out += row("saved activations", t.savedActivationBytes, "kept for backward, the loss's included");
    out += row("outputs", t.outputBytes);
    if (t.recomputedOps > 0)
      out += row("recomputed, not kept", t.recomputedActivationBytes,
                 fmt::format("{} op{} run forward again before backward", t.recomputedOps, t.recomputedOps == 1 ? "" : "s"));
  }
  if (options.memoryBudget > 0) {
    double peak = m.training ? m.training->peakBytes : m.inference.peakBytes;
    out += fmt::format("  budget {}: {}\n", formatBytes(options.memoryBudget),
                       peak > options.memoryBudget ? fmt::format("OVER by {}", formatBytes(peak - options.memoryBudget))
                                                   : fmt::format("fits, {} to spare", formatBytes(options.memoryBudget - peak)));
  }
  return out;
}

// irc memory's flags.
struct MemoryArgs {
  std::vector<std::string> positional;
  std::optional<int64_t> rank;
  std::optional<Optimizer> optimizer;
  std::optional<double> budget;
  bool training = false, allRanks = false;
  std::string plot, trace, schedulePlot;
  ParallelOverrides overrides;
  ColorMode color = ColorMode::Auto;
};

MemoryArgs parseMemoryArgs(const std::vector<std::string>& args) {
  const CommandSpec& spec = commandSpec("memory");
  ArgScanner scan(args, flagsWithValue(spec), switchFlags(spec));
  MemoryArgs a;
  while (!scan.done()) {
    auto item = scan.next();
    const std::string& f = item.flag;
    if (f.empty()) a.positional.push_back(item.value);
    else if (f == "--rank") a.rank = parseIntArg(f, item.value);
    else if (f == "--color") a.color = parseColorMode(item.value);
    else if (f == "--plot") a.plot = item.value;
    else if (f == "--trace") a.trace = item.value;
    else if (f == "--schedule-plot") a.schedulePlot = item.value;
    else if (f == "--training") a.training = true;
    else if (f == "--all-ranks") a.allRanks = true;
    else if (f == "--optimizer") {
      a.optimizer = parseOptimizer(item.value);
      if (!a.optimizer)
        throw UsageError(
            fmt::format("--optimizer: '{}' is not an optimizer; valid: {}", item.value, joinNames(optimizerNames())));
    } else if (f == "--memory-budget") {
      std::string error;
      a.budget = parseByteSize(item.value, error);
      if (!a.budget) throw UsageError(fmt::format("--memory-budget: {}", error));
    } else if (takeGraphFlag(f, item.value, a.overrides)) {
      continue;
    } else if (f == "--search-mode") {
      a.overrides.searchMode = parseSearchModeArg(f, item.value);
    } else if (f == "--redistribution") {
      a.overrides.redistribution = parseRedistributionArg(f, item.value);
    }
  }
  return a;
}

}  // namespace

ExitStatus runMemory(const std::vector<std::string>& args) {
  const MemoryArgs a = parseMemoryArgs(args);
  const auto& [positional, rank, optimizer, budget, training, allRanks, plot, trace, schedulePlot, overrides, color] = a;
  if (positional.size() != 1) throw UsageError("usage: irc memory MODEL.yaml [--rank R] [--plot FILE.svg]");
  auto loaded = loadModelOrReport(positional[0], color, overrides);
  if (!loaded) return ExitStatus::Rejected;
  CompileOptions options = loaded->options;
  if (training || optimizer) options.training = true;
  if (optimizer) options.optimizer = *optimizer;
  if (budget) options.memoryBudget = *budget;
  if (!searchConfigurationOrReport(*loaded, options, color)) return ExitStatus::Rejected;
  if (auto err = timelineNeeds(options, trace.empty() ? (schedulePlot.empty() ? "" : "--schedule-plot") : "--trace")) {
    std::cerr << "irc: error: " << *err << "\n";
    return ExitStatus::Rejected;
  }
  int64_t r = rank.value_or(options.globalRank);
  if (r < 0 || r >= options.rankCount())
    throw UsageError(fmt::format("--rank {} is not a rank of {} devices", r, options.rankCount()));
  options.stopAfter = "redistribution";
  options.ranks = {r};
  PassContext context{*loaded->diags};
  Graph& graph = loaded->graph;
  if (compileWithSearch(graph, options, context, {}) == RunOutcome::Rejected) {
    loaded->diags->render(std::cerr, useColor(color, stderr));
    return ExitStatus::Rejected;
  }
  std::optional<MemoryEstimate> memory = memoryOf(graph, options, r);
  if (!memory) throw InternalError("the memory estimate needs every op's layouts after redistribution");
  if (!trace.empty() || !schedulePlot.empty()) {
    TimelineOutputs timeline(graph, options, trace, schedulePlot, allRanks);
    if (auto err = timeline.write()) {
      std::cerr << "irc: error: " << *err << "\n";
      return ExitStatus::Rejected;
    }
  }
  if (allRanks) {
    std::cout << allRanksTable(graph, options);
    return ExitStatus::Ok;
  }
  std::cout << memoryTable(*memory, graph, options, r);
  if (!plot.empty()) {
    std::string title = fmt::format("{}: live bytes of rank {} of {}", graph.name, r, options.rankCount());
    if (auto err = writeFileAtomically(plot, memoryPlotSvg(*memory, title))) {
      std::cerr << "irc: error: " << *err << "\n";
      return ExitStatus::Rejected;
    }
  }
  return ExitStatus::Ok;
}

}  // namespace irc::cli
