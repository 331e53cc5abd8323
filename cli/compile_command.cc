// `irc MODEL [options]`: load, run the pipeline, write dumps.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cost/cluster_presets.h"
#include "dumps/dump_writer.h"
#include "dumps/mindspore_context_code.h"
#include "dumps/plan_code.h"
#include "dumps/report.h"
#include "frontends/mindspore/strategy_checkpoint.h"
#include "ir/byte_size.h"
#include "ir/limits.h"
#include "ir/suggest.h"
#include "ops/collective.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"
#include "cost/stage_estimate.h"
#include "passes/pipeline/pipeline.h"
#include "cost/step_schedule.h"
#include "cli/cli_util.h"
#include "cli/command_specs.h"
#include "cli/plan_out.h"
#include "cli/timeline_outputs.h"
#include "cli/commands.h"
#include "plan/device_precision.h"

namespace irc::cli {
namespace {

struct CompileArgs {
  std::string model;
  bool dumpAll = false;
  std::set<std::string> dumpAfter;
  std::string dumpDir;
  std::optional<int64_t> rank;
  bool allRanks = false;
  int64_t maxRanks = kDefaultMaxRanks;
  ParallelOverrides overrides;
  std::vector<std::string> passes;  // empty: the whole pipeline
  std::string stopAfter;
  std::string report;  // --report FILE or "-"
  std::string strategyCkptOut;
  std::string torchOut, mindsporeOut;  // --torch-out, --mindspore-out
  std::string planOut;                 // --plan-out
  std::string trace, schedulePlot;     // --trace, --schedule-plot
  int reportIndent = -1;               // --report-indent N; compact by default
  std::optional<double> alpha, beta, gamma, searchTimeLimit;
  std::optional<double> memoryBudget;
  std::optional<ClusterDescription> cluster;  // --cluster PRESET
  std::optional<Precision> precision;         // --precision
  bool precisionAuto = false;                 // --precision auto: the structural search chooses
  bool timePasses = false;
  bool dumpLocations = false;
  bool dumpScopes = false;
  bool dumpDot = false;
  bool quiet = false;
  ColorMode color = ColorMode::Auto;
};

const PipelineStage& stageOrThrow(const std::string& flag, const std::string& name) {
  if (const PipelineStage* s = findStage(name)) return *s;
  auto match = closestMatch(name, stageNames());
  throw UsageError(match ? fmt::format("{}: unknown pass '{}'; did you mean '{}'?", flag, name, *match)
                         : fmt::format("{}: unknown pass '{}'; valid: {}", flag, name, joinNames(stageNames())));
}

// The dump and output flags; false for any other.
bool takeOutputFlag(const std::string& f, const std::string& value, CompileArgs& a) {
  if (f == "--dump-all") a.dumpAll = true;
  else if (f == "--dump-after")
    for (const auto& name : splitNames(value)) a.dumpAfter.insert(stageOrThrow(f, name).dumpName);
  else if (f == "--dump-dir") a.dumpDir = value;
  else if (f == "--rank") a.rank = parseIntArg(f, value);
  else if (f == "--all-ranks") a.allRanks = true;
  else if (f == "--max-ranks") a.maxRanks = parsePositiveIntArg(f, value);
  else if (f == "--passes")
    for (const auto& name : splitNames(value)) a.passes.push_back(stageOrThrow(f, name).passName);
  else if (f == "--stop-after") a.stopAfter = stageOrThrow(f, value).passName;
  else if (f == "--time-passes") a.timePasses = true;
  else if (f == "--dump-scopes") a.dumpScopes = true;
  else if (f == "--dump-locations") a.dumpLocations = true;
  else if (f == "--dump-dot") a.dumpDot = true;
  else if (f == "-q" || f == "--quiet") a.quiet = true;
  else if (f == "--color") a.color = parseColorMode(value);
  else if (f == "--report") a.report = value;
  else if (f == "--strategy-ckpt-out") a.strategyCkptOut = value;
  else if (f == "--plan-out") a.planOut = value;
  else if (f == "--torch-out") a.torchOut = value;
  else if (f == "--mindspore-out") a.mindsporeOut = value;
  else if (f == "--trace") a.trace = value;
  else if (f == "--schedule-plot") a.schedulePlot = value;
  else if (f == "--report-indent") {
    int64_t n = parseIntArg(f, value);
    if (n < 0 || n > 16) throw UsageError(fmt::format("--report-indent takes 0 .. 16; got '{}'", value));
    a.reportIndent = static_cast<int>(n);
  } else return false;
  return true;
}

// The search's and the cost model's flags; false for any other.
bool takeCostFlag(const std::string& f, const std::string& value, CompileArgs& a) {
  if (f == "--search-mode") a.overrides.searchMode = parseSearchModeArg(f, value);
  else if (f == "--redistribution") a.overrides.redistribution = parseRedistributionArg(f, value);
  else if (f == "--strategy-ckpt-in") a.overrides.strategyCkptIn = value;
  else if (f == "--alpha" || f == "--beta" || f == "--gamma")
    (f == "--alpha" ? a.alpha : f == "--beta" ? a.beta : a.gamma) = parseCostModelArg(f, value);
  else if (f == "--search-time-limit") {
    a.searchTimeLimit = parseSecondsArg(f, value);
    if (!(*a.searchTimeLimit > 0)) throw UsageError(fmt::format("--search-time-limit takes seconds > 0; got '{}'", value));
  } else if (f == "--memory-budget") {
    std::string error;
    a.memoryBudget = parseByteSize(value, error);
    if (!a.memoryBudget) throw UsageError(fmt::format("--memory-budget: {}", error));
  } else if (f == "--cluster") {
    a.cluster = clusterPreset(value);
    if (!a.cluster)
      throw UsageError(fmt::format("--cluster: unknown preset '{}'; valid: {}", value, joinNames(clusterPresetNames())));
  } else if (f == "--precision") {
    a.precisionAuto = value == "auto";
    a.precision = a.precisionAuto ? Precision::Bf16Mixed : parsePrecision(value);
    if (!a.precision)
      throw UsageError(fmt::format("--precision: unknown precision '{}'; valid: {}, auto", value, joinNames(precisionNames())));
  } else return false;
  return true;
}

// The strategy checkpoint --mindspore-out's file refers to: --strategy-ckpt-out's, else one
// written beside it (shard.py -> shard_strategy.json).
std::string mindsporeCheckpointPath(const CompileArgs& a) {
  if (!a.strategyCkptOut.empty()) return a.strategyCkptOut;
  std::string stem = a.mindsporeOut;
  if (stem.size() > 3 && stem.ends_with(".py")) stem.resize(stem.size() - 3);
  return stem + "_strategy.json";
}

// No output is written over an input or over another output: each file named once (the same
// file under two spellings too).
void checkOutputPaths(const CompileArgs& a) {
  std::vector<std::pair<std::string, std::string>> inputs, outputs;
  if (a.model != "-") inputs.emplace_back("the model", a.model);
  if (!a.overrides.strategyCkptIn.empty()) inputs.emplace_back("--strategy-ckpt-in", a.overrides.strategyCkptIn);
  if (!a.report.empty() && a.report != "-") outputs.emplace_back("--report", a.report);
  if (!a.strategyCkptOut.empty()) outputs.emplace_back("--strategy-ckpt-out", a.strategyCkptOut);
  if (!a.torchOut.empty()) outputs.emplace_back("--torch-out", a.torchOut);
  if (!a.mindsporeOut.empty()) {
    outputs.emplace_back("--mindspore-out", a.mindsporeOut);
    if (a.strategyCkptOut.empty()) outputs.emplace_back("--mindspore-out's strategy checkpoint", mindsporeCheckpointPath(a));
  }
  if (!a.planOut.empty()) outputs.emplace_back("--plan-out", a.planOut);
  if (!a.trace.empty()) outputs.emplace_back("--trace", a.trace);
  if (!a.schedulePlot.empty()) outputs.emplace_back("--schedule-plot", a.schedulePlot);
  auto same = [](const std::string& x, const std::string& y) {
    std::error_code ex, ey;
    auto px = std::filesystem::weakly_canonical(x, ex), py = std::filesystem::weakly_canonical(y, ey);
    return ex || ey ? x == y : px == py;
  };
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (const auto& [what, path] : inputs)
      if (same(outputs[i].second, path))
        throw UsageError(fmt::format("{} '{}' is {} '{}': irc does not write over its input; name another file", outputs[i].first,
                                     outputs[i].second, what, path));
    for (size_t j = 0; j < i; ++j)
      if (same(outputs[i].second, outputs[j].second))
        throw UsageError(fmt::format("{} and {} both name '{}': each output needs a file of its own", outputs[j].first,
                                     outputs[i].first, outputs[i].second));
  }
}

CompileArgs parseCompileArgs(const std::vector<std::string>& args) {
  const CommandSpec& spec = commandSpec("");
  ArgScanner scan(args, flagsWithValue(spec), switchFlags(spec));
  CompileArgs a;
  while (!scan.done()) {
    auto item = scan.next();
    const std::string& f = item.flag;
    if (f.empty()) {
      if (!a.model.empty()) throw UsageError(fmt::format("more than one model given: '{}' and '{}'", a.model, item.value));
      a.model = item.value;
    } else if (!takeOutputFlag(f, item.value, a) && !takeGraphFlag(f, item.value, a.overrides)) {
      takeCostFlag(f, item.value, a);
    }
  }
  if (a.model.empty()) throw UsageError("no model given; usage: irc MODEL.yaml [options] (see 'irc --help')");
  if (!a.passes.empty() && !a.stopAfter.empty()) throw UsageError("--passes and --stop-after exclude each other");
  if (a.rank && a.allRanks) throw UsageError("--rank and --all-ranks exclude each other");
  checkOutputPaths(a);
  return a;
}

// `--time-passes`: the time of every stage of the run -- loading, each pass, shape slicing,
// writing dumps, the report, tearing down -- on stderr at the end (never into dumps), and the
// process's peak memory (getrusage's high-water RSS) when the stage last ended: what a stage
// added to the peak is its figure less that of the stage that ended before it (rows are in the
// order stages first ran). It is added first, so a pass's time stops before the dump writer
// prints it; the dump writer's own time is measured around its calls. The total is the wall time
// since the run started, with the run's peak.
class StageTimer : public PassInstrumentation {
 public:
  using Clock = std::chrono::steady_clock;
  explicit StageTimer(Clock::time_point start) : start_(start) {}
  void beforePass(const PassStage&) override { passStart_ = Clock::now(); }
  void afterPass(const PassStage& stage, const Graph&) override {
    if (!stage.isLoaded()) add(std::string(stage.name), passStart_);
  }
  void afterRankPass(const PassStage& stage, const Graph&, int64_t) override { add(std::string(stage.name), passStart_); }
  void add(const std::string& stage, Clock::time_point since) {
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - since).count();
    double peak = peakMiB();
    for (auto& row : rows_)
      if (row.stage == stage) {
        row.ms += ms;
        row.peakMiB = peak;
        return;
      }
    rows_.push_back({stage, ms, peak});
  }
  void print() const {
    double total = std::chrono::duration<double, std::milli>(Clock::now() - start_).count(), listed = 0;
    double peak = peakMiB();
    std::cerr << fmt::format("{:<24} {:>10} {:>10}\n", "stage", "ms", "peak MiB");
    for (const Row& row : rows_) {
      std::cerr << fmt::format("{:<24} {:>10.3f} {:>10.1f}\n", row.stage, row.ms, row.peakMiB);
      listed += row.ms;
    }
    std::cerr << fmt::format("{:<24} {:>10.3f} {:>10.1f}\n", "other", std::max(0.0, total - listed), peak);
    std::cerr << fmt::format("{:<24} {:>10.3f} {:>10.1f}\n", "total (wall)", total, peak);
  }

 private:
  struct Row {
    std::string stage;
    double ms;
    double peakMiB;  // the process's peak RSS when the stage last ended
  };
  static double peakMiB() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB
  }
  Clock::time_point start_, passStart_;
  std::vector<Row> rows_;
};

// Times every call of another instrumentation (the dump writer) as one stage.
class TimedInstrumentation : public PassInstrumentation {
 public:
  TimedInstrumentation(PassInstrumentation& inner, StageTimer* timer, std::string stage)
      : inner_(inner), timer_(timer), stage_(std::move(stage)) {}
  void afterPass(const PassStage& stage, const Graph& graph) override {
    auto start = StageTimer::Clock::now();
    inner_.afterPass(stage, graph);
    if (timer_) timer_->add(stage_, start);
  }
  void afterRankPass(const PassStage& stage, const Graph& graph, int64_t rank) override {
    auto start = StageTimer::Clock::now();
    inner_.afterRankPass(stage, graph, rank);
    if (timer_) timer_->add(stage_, start);
  }
  void passFailed(const PassStage& stage, const Graph& graph, int64_t rank) override { inner_.passFailed(stage, graph, rank); }

 private:
  PassInstrumentation& inner_;
  StageTimer* timer_;
  std::string stage_;
};

// On a terminal, a compile that has run for more than a second shows the stage it is in on one
// status line of stderr, overwritten as it goes and cleared at the end. Nothing when stderr is
// not a terminal or with --quiet.
class ProgressLine : public PassInstrumentation {
 public:
  ProgressLine(bool enabled, std::chrono::steady_clock::time_point start) : enabled_(enabled), start_(start) {}
  ~ProgressLine() override { clear(); }
  void beforePass(const PassStage& stage) override { show(fmt::format("{} ({}/{})", stage.name, stage.position, 4)); }
  void afterRankPass(const PassStage&, const Graph&, int64_t rank) override {
    show(fmt::format("shape_slicing: rank {} done", rank));
  }
  void clear() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
    shown_ = false;
  }

 private:
  void show(const std::string& what) {
    if (!enabled_ || std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    std::cerr << "\r\033[Kirc: " << what << std::flush;
    shown_ = true;
  }
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
};

// What the end-of-compile summary says of the global graph (taken before it may become a rank's).
struct Summary {
  std::string name;
  size_t modelOps = 0;
  CompileTotals totals;
  std::optional<MemoryEstimate> memory;
  std::shared_ptr<const SearchSummary> search;
  std::vector<double> stageSeconds;         // pipelined: each stage's estimated time
  std::optional<ClusterStepEstimate> step;  // with a cluster
};

Summary summaryOf(const Graph& graph, const CompileOptions& options, int64_t rank) {
  Summary s{graph.name, 0, compileTotals(graph, &options, rank), memoryOf(graph, options, rank), graph.search, {}, {}};
  if (graph.stageDevices > 0) s.stageSeconds = stageSeconds(graph, options);
  if (options.cluster &&
      std::all_of(graph.ops.begin(), graph.ops.end(), [](const Op& op) { return op.inserted() || op.parallel->layoutsInferred; }))
    s.step = estimateClusterStep(graph, options);
  for (const Op& op : graph.ops) s.modelOps += op.inserted() ? 0 : 1;
  return s;
}

// The memory line, and a warning when the rank's peak is over the device's memory (with a
// cluster) or over the budget (every rank holds the same shapes in irc's SPMD, so the reported
// rank speaks for all): a run that would fail says so, budget or not.
void printMemory(const Summary& summary, const CompileOptions& options, int64_t rank, bool quiet) {
  if (!summary.memory) return;
  const MemoryEstimate& m = *summary.memory;
  if (!quiet) {
    std::string line = fmt::format("irc: per rank: peak {} inference", formatBytes(m.inference.peakBytes));
    if (m.training)
      line += fmt::format(", {} training step ({}; the first step {})", formatBytes(m.training->peakBytes),
                          optimizerName(m.training->optimizer), formatBytes(m.training->firstStepPeakBytes));
    std::cerr << line << "\n";
  }
  double peak = m.training ? m.training->peakBytes : m.inference.peakBytes;
  const double device = options.cluster ? options.cluster->device.hbmBytes : 0;
  std::string over;
  if (device > 0 && peak > device)
    over = options.cluster->preset.empty()
               ? fmt::format("over the {} of device memory the cluster gives", formatBytes(device))
               : fmt::format("over the {} a {} device holds", formatBytes(device), options.cluster->preset);
  else if (options.memoryBudget > 0 && peak > options.memoryBudget)
    over = fmt::format("over the memory budget of {}", formatBytes(options.memoryBudget));
  else return;
  std::vector<std::pair<double, std::string>> parts;
  if (m.training) {
    parts.clear();
    for (const PeakTerm& term : peakTerms(*m.training)) parts.emplace_back(term.bytes, term.name);
  } else {
    parts = {{m.inference.activationBytes, "activations"},
             {m.inference.parameterBytes, "parameters"},
             {m.inference.constantBytes, "constants"},
             {m.inference.communicationBytes, "communication results"}};
  }
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> biggest;
  for (size_t i = 0; i < parts.size() && i < 3; ++i)
    if (parts[i].first > 0) biggest.push_back(fmt::format("{} {}", parts[i].second, formatBytes(parts[i].first)));
  std::string where = m.training ? fmt::format("the training step's {}, from the second step on; the first step peaks at {}",
                                               m.training->peakPhase, formatBytes(m.training->firstStepPeakBytes))
                                 : fmt::format("inference, at {}", m.inference.peakAt);
  std::cerr << fmt::format("irc: warning: rank {} needs {} at its peak ({}), {}; biggest: {}\n", rank, formatBytes(peak), where,
                           over, fmt::join(biggest, ", "));
}

// search_mode auto: what the solver proved and what the plan is estimated at.
void printSearch(const SearchSummary& s) {
  if (s.configuration) {
    const ConfigurationSearch& c = *s.configuration;
    const SearchConfiguration& k = c.chosen;
    std::cerr << fmt::format(
        "irc: search: DP {} x TP {} x PP {}{}{}{}{}, micro-batch {} x {}, recompute {}, ZeRO stage {}, optimizer level {}: "
        "estimated step {:.4g} s, {:.4g} TFLOP/s per device, peak {}{} ({} layers; {} "
        "configurations, {} dropped by the memory bound, {} layer models, {} plans compiled)\n",
        k.dims.dp, k.dims.tp, k.dims.pp, k.dims.cp > 1 ? fmt::format(" x CP {}", k.dims.cp) : "",
        k.dims.v > 1                          ? fmt::format(" ({} virtual stages each)", k.dims.v)
        : k.pipelineSchedule == "zero_bubble" ? std::string(" (the zero-bubble schedule)")
                                              : std::string(),
        k.dims.ep > 1 || k.dims.etp > 1
            ? fmt::format(" (experts over {} of the data-parallel ranks{})", k.dims.ep,
                          k.dims.etp > 1 ? fmt::format(", each split over the {} tensor-parallel ranks", k.dims.etp) : "")
            : "",
        k.dims.sp ? " (sequence parallel)" : "", k.microBatchSize, k.microBatches, k.recompute, k.zeroStage, k.optimizerLevel,
        k.stepSeconds, k.tflopsPerDevice, formatBytes(k.peakBytes),
        s.memoryBudget > 0 ? " within " + formatBytes(s.memoryBudget) : std::string(" (no memory budget)"), c.layers,
        c.considered, c.prunedByMemory, c.probes, c.compiledPlans);
    if (s.status == "time_limit")
      std::cerr << fmt::format(
          "irc: search: search_time_limit {} s stopped it: {} configurations left without an estimate, {} of the best "
          "candidates not compiled; the plan may be slower than the full search's (raise --search-time-limit)\n",
          s.timeLimit, c.unestimated, c.uncompiled);
    if (!c.precisions.empty()) {
      std::vector<std::string> tried;
      for (const auto& [name, seconds] : c.precisions)
        tried.push_back(seconds > 0 ? fmt::format("{} {:.4g} s", name, seconds) : fmt::format("{}: nothing fits", name));
      std::cerr << fmt::format("irc: search: precision auto chose {} ({})\n", c.precision, fmt::join(tried, ", "));
    }
    return;
  }
  std::string line = fmt::format("irc: search: {} plan of {} ops ({} classes) in {:.2f} s of solver, estimated step {:.4g} s",
                                 s.status, s.searchedOps, s.classes.size(), s.solverSeconds, s.objective);
  if (s.status != "optimal") line += fmt::format(" (gap {:.2g} to the proven bound)", s.gap);
  if (s.memoryBudget > 0)
    line += fmt::format(", peak {} within {} ({} round{})", formatBytes(s.estimatedPeak), formatBytes(s.memoryBudget),
                        s.memoryRounds, s.memoryRounds == 1 ? "" : "s");
  std::cerr << line << "\n";
}

// Pipeline stages: the schedule's bubble and the stage that sets the pace.
void printPipeline(const std::vector<double>& seconds, const CompileOptions& options) {
  size_t slowest = std::max_element(seconds.begin(), seconds.end()) - seconds.begin();
  std::cerr << fmt::format(
      "irc: pipeline: {} stages of {} ranks{}, {} micro-batches, bubble {:.1f}%{}; slowest stage {} "
      "({:.4g} s estimated a micro-batch)\n",
      options.pipelineStages, options.deviceNum,
      options.virtualStages > 1 ? fmt::format(" ({} virtual stages each, interleaved)", options.virtualStages)
      : options.schedule() == PipelineSchedule::OneFOneB ? std::string()
                                                         : fmt::format(", {} schedule", pipelineScheduleName(options.schedule())),
      options.microBatches, 100 * bubbleFraction(options),
      options.schedule() == PipelineSchedule::ZeroBubble ? " under 1F1B (the weight gradients fill part of it)" : "", slowest,
      seconds[slowest]);
}

// On a cluster: the step's time as it runs, and what each device computes.
void printClusterStep(const ClusterStepEstimate& e, const CompileOptions& options) {
  std::cerr << fmt::format(
      "irc: step on {} ({}): {:.4g} s estimated, {:.4g} TFLOP/s per device, MFU {:.3g}% "
      "(compute {:.4g} s, exposed communication {:.4g} s, pipeline bubble {:.4g} s, optimizer {:.4g} s{})\n",
      options.cluster->preset.empty() ? "the cluster" : options.cluster->preset, precisionName(options.precision), e.total,
      e.tflopsPerDevice, 100 * e.mfu, e.compute, e.exposedCommunication, e.pipelineBubble, e.optimizer,
      e.weightQuantization > 0 ? fmt::format(", weight casts {:.4g} s", e.weightQuantization) : "");
}

void printSummary(const Summary& summary, const CompileOptions& options, size_t dumpsWritten, const std::string& dumpDir) {
  const CompileTotals& totals = summary.totals;
  if (summary.search) printSearch(*summary.search);
  if (!summary.stageSeconds.empty()) printPipeline(summary.stageSeconds, options);
  std::vector<std::string> inserted;
  for (const auto& [type, n] : totals.insertedByType) inserted.push_back(fmt::format("{} {}", n, type));
  std::cerr << fmt::format("irc: {}: {} ops on {} devices; inserted: {}\n", summary.name, summary.modelOps, options.rankCount(),
                           inserted.empty() ? "nothing" : fmt::format("{}", fmt::join(inserted, ", ")));
  // The rank's parameters as it holds them: its pipeline stage's, in the precision it computes
  // in (the totals' figure is every stage's slices at their declared dtype).
  double parameters = totals.paramBytesPerRank;
  if (summary.memory)
    parameters = summary.memory->training ? summary.memory->training->parameterBytes : summary.memory->inference.parameterBytes;
  if (options.training)
    std::cerr << fmt::format(
        "irc: per rank: {} bytes of forward communication, {} bytes of gradient {}, {} bytes of "
        "parameters\n",
        formatNumber(totals.commBytesPerRank), formatNumber(totals.gradBytesPerRank),
        options.parallelOptimizerLevel > 0
            ? fmt::format("reduction ({} under optimizer parallel)", collectiveName(CollectiveKind::ReduceScatter))
        : options.zeroStage > 0
            // The same bytes as the AllReduce they replace (docs/memory.md).
            ? fmt::format("reduction ({} and the updated weights' {} under ZeRO-{})",
                          collectiveName(CollectiveKind::ReduceScatter), collectiveName(CollectiveKind::AllGather),
                          options.zeroStage)
            : std::string(collectiveName(CollectiveKind::AllReduce)),
        formatNumber(parameters));
  else
    std::cerr << fmt::format("irc: per rank: {} bytes of communication, {} bytes of parameters\n",
                             formatNumber(totals.commBytesPerRank), formatNumber(parameters));
  if (summary.step) printClusterStep(*summary.step, options);
  if (dumpsWritten > 0)
    std::cerr << fmt::format("irc: wrote {} dump{} under {}/\n", dumpsWritten, dumpsWritten == 1 ? "" : "s", dumpDir);
}

// The compile's options from the command line (cost model, passes, ranks), checked.
void applyCompileArgs(const CompileArgs& a, CompileOptions& options) {
  if (a.alpha) options.costModel.alpha = *a.alpha;
  if (a.memoryBudget) options.memoryBudget = *a.memoryBudget;
  if (a.beta) options.costModel.beta = *a.beta;
  if (a.gamma) options.costModel.gamma = *a.gamma;
  if (a.searchTimeLimit) options.searchTimeLimit = *a.searchTimeLimit;
  if (a.cluster) options.cluster = a.cluster;
  if (a.precision) options.precision = *a.precision, options.precisionAuto = a.precisionAuto;
  if (options.cluster)
    if (auto why = whyUnsupported(*options.cluster, options.precision))
      throw UsageError(fmt::format("{} (valid here: {})", *why, joinNames(supportedPrecisions(*options.cluster))));
  options.passes = a.passes;
  options.stopAfter = a.stopAfter;
  if (a.rank && (*a.rank < 0 || *a.rank >= options.rankCount()))
    throw UsageError(fmt::format("--rank {} is not a rank of {} devices (valid: 0 .. {})", *a.rank, options.rankCount(),
                                 options.rankCount() - 1));
  if (a.allRanks && options.rankCount() > a.maxRanks)
    throw UsageError(
        fmt::format("--all-ranks would write {} rank folders; the limit is {} (raise it with --max-ranks N, "
                    "or dump one rank with --rank R)",
                    options.rankCount(), a.maxRanks));
  options.ranks = a.allRanks ? options.everyRank() : std::vector<int64_t>{a.rank.value_or(options.globalRank)};
}

DumpOptions dumpOptionsFor(const CompileArgs& a, const Graph& graph, const CompileOptions& options) {
  DumpOptions d;
  // `-` has no file name: the dump folder is named after the model's `name`.
  d.dir = !a.dumpDir.empty() ? a.dumpDir : (a.model == "-" ? graph.name : modelStem(a.model)) + "_ir";
  d.all = a.dumpAll;
  d.after = a.dumpAfter;
  d.locations = a.dumpLocations;
  d.scopes = a.dumpScopes;
  d.dot = a.dumpDot;
  // The file's name only: a dump never holds an absolute path (ir-dump.md, Determinism).
  d.modelFileName = a.model == "-" ? "<stdin>" : std::filesystem::path(a.model).filename().string();
  d.ranks = options.ranks;
  d.settings = &options;
  return d;
}

// What the compile writes besides the dumps, taken from the global graph once the global passes
// are done: the report, staged beside its file and put in place only when the whole compile
// succeeds (stdout gets it at the end), the strategy checkpoint's text, the summary. The global
// graph can then become the rank's graph without a copy.
class CompileOutputs {
 public:
  CompileOutputs(const CompileArgs& a, const CompileOptions& options, const ModelFacts& facts, StageTimer& timer)
      : a_(a), options_(options), facts_(facts), timer_(timer) {}

  void take(const Graph& graph) {
    auto start = StageTimer::Clock::now();
    summary = summaryOf(graph, options_, reportRank());
    timer_.add("summary, memory estimate", start);
    start = StageTimer::Clock::now();
    if (!a_.report.empty() && a_.report != "-") {
      report_.emplace(a_.report, [&](std::ostream& out) {
        writeReport(out, graph, options_, reportRank(), a_.reportIndent, &summary.memory, facts_);
      });
      timer_.add("report", start);
    }
    if (!a_.strategyCkptOut.empty() || !a_.mindsporeOut.empty()) checkpoint_ = strategyCheckpointJson(graph, options_.globalRank);
    if (!a_.torchOut.empty()) {
      torch_ = torchPlanCode(graph, options_, summary.totals, summary.memory ? &*summary.memory : nullptr, facts_);
      for (const std::string& w : torch_.warnings) std::cerr << "irc: warning: --torch-out: " << w << "\n";
    }
    if (!a_.mindsporeOut.empty()) {
      const PlanCode context = mindsporeContextCode(graph, options_);
      mindspore_ = mindsporeShardCode(graph, options_, mindsporeCheckpointPath()) + context.text;
      for (const std::string& w : context.warnings) std::cerr << "irc: warning: --mindspore-out: " << w << "\n";
    }
    if (!a_.trace.empty() || !a_.schedulePlot.empty()) {
      start = StageTimer::Clock::now();
      timeline_.emplace(graph, options_, a_.trace, a_.schedulePlot, a_.allRanks);
      timer_.add("trace", start);
    }
  }
  // Whether the report still needs the global graph after the compile (on stdout).
  bool needsGlobalGraph() const { return a_.report == "-"; }

  // After a successful compile; false when an output could not be written (said on stderr).
  bool write(const Graph& graph) {
    if (a_.report == "-") {
      auto start = StageTimer::Clock::now();
      writeReport(std::cout, graph, options_, reportRank(), a_.reportIndent, &summary.memory,
                  facts_);  // a failed write is caught by the driver
      timer_.add("report", start);
    }
    if (report_)
      if (auto err = report_->commit()) return fail(*err);
    if (!a_.strategyCkptOut.empty())
      if (auto err = writeFileAtomically(a_.strategyCkptOut, checkpoint_)) return fail(*err);
    if (!a_.torchOut.empty())
      if (auto err = writeFileAtomically(a_.torchOut, torch_.text)) return fail(*err);
    if (!a_.mindsporeOut.empty()) {
      if (auto err = writeFileAtomically(a_.mindsporeOut, mindspore_)) return fail(*err);
      if (a_.strategyCkptOut.empty())
        if (auto err = writeFileAtomically(mindsporeCheckpointPath(), checkpoint_)) return fail(*err);
    }
    if (timeline_)
      if (auto err = timeline_->write()) return fail(*err);
    return true;
  }

  Summary summary;

 private:
  int64_t reportRank() const { return a_.rank.value_or(options_.globalRank); }
  std::string mindsporeCheckpointPath() const { return cli::mindsporeCheckpointPath(a_); }
  static bool fail(const std::string& error) {
    std::cerr << "irc: error: " << error << "\n";
    return false;
  }
  const CompileArgs& a_;
  const CompileOptions& options_;
  const ModelFacts& facts_;
  StageTimer& timer_;
  std::optional<StagedFile> report_;
  std::string checkpoint_;
  PlanCode torch_;
  std::string mindspore_;
  std::optional<TimelineOutputs> timeline_;
};

// `--plan-out` (cli/plan_out.h): the graph as strategy propagation leaves it, before anything
// is inserted.
class PlanCapture : public PassInstrumentation {
 public:
  PlanCapture(const CompileOptions& options, std::string model, std::string out)
      : options_(options), model_(std::move(model)), out_(std::move(out)) {}
  void afterPass(const PassStage& stage, const Graph& graph) override {
    if (stage.position == 1) error = planOutText(graph, options_, model_, out_, text);  // strategy propagation (every mode)
  }
  std::string text;
  std::optional<std::string> error;

 private:
  const CompileOptions& options_;
  std::string model_, out_;
};

}  // namespace

ExitStatus runCompile(const std::vector<std::string>& args) {
  CompileArgs a = parseCompileArgs(args);
  auto parseStart = std::chrono::steady_clock::now();
  auto loaded = loadModelOrReport(a.model, a.color, a.overrides);
  StageTimer timer(parseStart);
  timer.add("load", parseStart);
  if (!loaded) return ExitStatus::Rejected;
  Graph& graph = loaded->graph;
  CompileOptions& options = loaded->options;
  applyCompileArgs(a, options);
  auto searchStart = StageTimer::Clock::now();
  if (!searchConfigurationOrReport(*loaded, options, a.color, a.quiet)) return ExitStatus::Rejected;
  timer.add("search", searchStart);
  if (auto err = timelineNeeds(options, a.trace.empty() ? (a.schedulePlot.empty() ? "" : "--schedule-plot") : "--trace")) {
    std::cerr << "irc: error: " << *err << "\n";
    return ExitStatus::Rejected;
  }
  DumpOptions dumpOptions = dumpOptionsFor(a, graph, options);
  bool dumping = a.dumpAll || !a.dumpAfter.empty();
  DumpWriter dumps(dumpOptions);
  TimedInstrumentation timedDumps(dumps, a.timePasses ? &timer : nullptr, "write dumps");
  ProgressLine progress(!a.quiet && isatty(fileno(stderr)) != 0, parseStart);
  CompileHooks hooks;
  // The rank's local graph is not needed after its dumps: handed over here, it is let go of
  // inside the measured teardown instead of inside the pass manager.
  hooks.rankGraphs = [&](int64_t, Graph&& local) {
    auto start = StageTimer::Clock::now();
    // One rank's graph is let go of at exit; with --all-ranks each is freed at once, so that
    // memory does not grow with the rank count.
    if (options.ranks.size() == 1) {
      releaseAtExit(std::move(local));
    } else {
      Graph freed = std::move(local);
    }
    timer.add("teardown", start);
  };
  CompileOutputs outputs(a, options, loaded->facts, timer);
  hooks.globalGraph = [&](const Graph& global) { outputs.take(global); };
  hooks.keepGlobalGraph = outputs.needsGlobalGraph();
  if (a.timePasses) hooks.instrumentations.push_back(&timer);
  hooks.instrumentations.push_back(&progress);
  if (dumping) hooks.instrumentations.push_back(&timedDumps);

  PlanCapture plan(options, a.model, a.planOut);
  if (!a.planOut.empty()) hooks.instrumentations.push_back(&plan);

  PassContext context{*loaded->diags};
  RunOutcome outcome = compileWithSearch(graph, options, context, hooks);
  progress.clear();
  if (outcome == RunOutcome::Rejected) {
    loaded->diags->render(std::cerr, useColor(a.color, stderr));
    // The dumps written before the failing pass stay, with that pass's input beside them.
    if (dumping) {
      if (auto err = dumps.commit()) std::cerr << "irc: error: " << *err << "\n";
      for (const std::string& path : dumps.written())
        if (path.ends_with(".failed.ir")) std::cerr << "irc: note: the failing pass's input is dumped to " << path << "\n";
    }
    return ExitStatus::Rejected;
  }
  auto commitStart = StageTimer::Clock::now();
  if (auto err = dumps.commit()) {
    std::cerr << "irc: error: " << *err << "\n";
    return ExitStatus::Rejected;
  }
  timer.add("write dumps", commitStart);
  if (!outputs.write(graph)) return ExitStatus::Rejected;
  if (!a.planOut.empty())
    if (auto err = plan.error ? plan.error : writeFileAtomically(a.planOut, plan.text)) {
      std::cerr << "irc: error: " << *err << "\n";
      return ExitStatus::Rejected;
    }
  if (!a.quiet) printSummary(outputs.summary, options, dumping ? dumps.written().size() : 0, dumpOptions.dir);
  printMemory(outputs.summary, options, a.rank.value_or(options.globalRank), a.quiet);
  auto teardownStart = StageTimer::Clock::now();
  releaseAtExit(std::move(*loaded));  // the graph and the model text, inside the measured run
  timer.add("teardown", teardownStart);
  if (a.timePasses) timer.print();
  return ExitStatus::Ok;
}

}  // namespace irc::cli
