// `irc diff A B [--rank R]`: a sharding-aware diff of two dumps (.ir), two dump directories
// (paired by pass) or two models (compiled in memory, every stage compared). Exit status as
// diff(1): 0 identical, 1 different (or a model was rejected), 2 usage.
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "dumps/dump_writer.h"
#include "dumps/ir_diff.h"
#include "dumps/ir_printer.h"
#include "frontends/mindspore/parallel_facts.h"
#include "ir/attribute.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"
#include "cli/cli_util.h"
#include "cli/command_specs.h"
#include "cli/commands.h"

namespace irc::cli {
namespace {
namespace fs = std::filesystem;

// Every stage's dump text, by (pipeline position, pass) so that stages sort in pipeline order;
// printed as the pass name.
using StageKey = std::pair<int, std::string>;
using Stages = std::map<StageKey, std::string>;

StageKey stageKey(int position, std::string_view pass) { return {position, std::string(pass)}; }
const std::string& stageName(const StageKey& key) { return key.second; }

class TextCapture : public PassInstrumentation {
 public:
  TextCapture(int64_t rank, const ParallelSettings& settings) : rank_(rank), settings_(settings) {}
  void afterPass(const PassStage& stage, const Graph& graph) override {
    PrintOptions options;
    options.rank = rank_;
    options.settings = &settings_;
    stages[stageKey(stage.position, stage.dumpName)] = printGraph(graph, options);
  }
  void afterRankPass(const PassStage& stage, const Graph& graph, int64_t) override { afterPass(stage, graph); }
  Stages stages;

 private:
  int64_t rank_;
  const ParallelSettings& settings_;
};

std::optional<Stages> stagesOfModel(const std::string& path, int64_t rank, ColorMode color) {
  auto loaded = loadModelOrReport(path, color);
  if (!loaded) return std::nullopt;
  CompileOptions options = loaded->options;
  if (rank >= options.rankCount())
    throw UsageError(fmt::format("--rank {} is not a rank of '{}' ({} devices)", rank, path, options.rankCount()));
  options.ranks = {rank};
  TextCapture capture(rank, options);
  PassContext context{*loaded->diags};
  CompileHooks hooks;
  hooks.instrumentations.push_back(&capture);
  if (compileWithSearch(loaded->graph, options, context, hooks) == RunOutcome::Rejected) {
    loaded->diags->render(std::cerr, useColor(color, stderr));
    return std::nullopt;
  }
  return capture.stages;
}

// A dump file's text, or nullopt with the reason printed: what cannot be read, or is no whole
// dump (garbage, a dump cut short), is not compared as an empty one.
std::optional<std::string> dumpTextOf(const std::string& path) {
  std::string error;
  auto text = readModelText(path, error);
  if (!text) {
    std::cerr << fmt::format("irc: error: {}\n", error);
    return std::nullopt;
  }
  if (auto defect = dumpDefect(readDumpText(*text), *text)) {
    std::cerr << fmt::format("irc: error: {}: {}\n", path, *defect);
    return std::nullopt;
  }
  return text;
}

// The dumps of a directory (its rank_<r>/ folder when there is one): `<pass>_XXXX.ir` files;
// nullopt (said why) where it holds none for the rank or one is not a whole dump.
std::optional<Stages> stagesOfDir(const std::string& dir, int64_t rank) {
  fs::path rankDir = fs::path(dir) / fmt::format("rank_{}", rank);
  if (!fs::exists(rankDir) && fs::exists(fs::path(dir) / "rank_0")) {
    std::cerr << fmt::format("irc: error: {} has no folder rank_{} (--rank names one of its rank_<r> folders)\n", dir, rank);
    return std::nullopt;
  }
  fs::path root = fs::exists(rankDir) ? rankDir : fs::path(dir);
  Stages stages;
  for (const auto& e : fs::directory_iterator(root)) {
    std::optional<DumpFileName> dump = parseDumpFileName(e.path().filename().string());
    if (!dump) continue;
    auto text = dumpTextOf(e.path().string());
    if (!text) return std::nullopt;
    stages[stageKey(dump->position, dump->dumpName)] = *text;
  }
  if (stages.empty()) {
    std::cerr << fmt::format("irc: error: {} holds no dump (<pass>_XXXX.ir files, as --dump-all writes them)\n", root.string());
    return std::nullopt;
  }
  return stages;
}

bool isModel(const std::string& p) {
  std::string ext = fs::path(p).extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".onnx" || p == "-";
}

// The review summary of two sets of stages: strategies from the first dump that has them
// (step_parallel_begin), inserted ops and totals from the last (validate: local shapes).
struct DiffSummary {
  std::vector<std::tuple<std::string, std::string, std::string>> strategies;  // op, before, after
  // Pipelines: the values each side sends between stages (from its step_parallel_end dump, whose
  // global graph has every stage's Sends): a moved stage boundary is one change.
  std::vector<std::string> sentBefore, sentAfter;
  std::map<std::string, int> added, removed;  // inserted ops by type
  DumpSummary before, after;
  bool changed() const {
    return !strategies.empty() || sentBefore != sentAfter || !added.empty() || !removed.empty() ||
           before.commBytesPerRank != after.commBytesPerRank || before.paramBytesPerRank != after.paramBytesPerRank ||
           before.gradBytesPerRank != after.gradBytesPerRank;
  }
};

bool sameStages(const Stages& a, const Stages& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [stage, text] : a)
    if (!b.contains(stage) || !diffIrText(text, b.at(stage)).empty()) return false;
  return true;
}

const std::string* stageText(const Stages& s, const std::vector<std::string>& preferred, bool last) {
  for (const std::string& name : preferred)
    for (const auto& [key, text] : s)
      if (stageName(key) == name) return &text;
  if (s.empty()) return nullptr;
  return last ? &s.rbegin()->second : &s.begin()->second;
}

DiffSummary summarize(const Stages& a, const Stages& b) {
  DiffSummary d;
  d.sentBefore = sentTransfers(stageText(a, {"step_parallel_end"}, true));
  d.sentAfter = sentTransfers(stageText(b, {"step_parallel_end"}, true));
  const std::string *sa = stageText(a, {"step_parallel_begin", "tensor_layout", "step_parallel_end", "validate"}, false),
                    *sb = stageText(b, {"step_parallel_begin", "tensor_layout", "step_parallel_end", "validate"}, false);
  if (sa && sb) {
    DumpSummary x = summarizeDump(*sa), y = summarizeDump(*sb);
    for (const std::string& op : x.strategyOrder) {
      if (y.strategies.contains(op) && y.strategies[op] != x.strategies[op])
        d.strategies.emplace_back(op, x.strategies[op], y.strategies[op]);
    }
  }
  const std::string *ta = stageText(a, {"validate", "step_parallel_end"}, true),
                    *tb = stageText(b, {"validate", "step_parallel_end"}, true);
  if (ta) d.before = summarizeDump(*ta);
  if (tb) d.after = summarizeDump(*tb);
  std::set<std::string> types;
  for (const auto& [t, n] : d.before.insertedByType) types.insert(t);
  for (const auto& [t, n] : d.after.insertedByType) types.insert(t);
  for (const std::string& t : types) {
    int n = (d.after.insertedByType.count(t) ? d.after.insertedByType.at(t) : 0) -
            (d.before.insertedByType.count(t) ? d.before.insertedByType.at(t) : 0);
    if (n > 0) d.added[t] = n;
    if (n < 0) d.removed[t] = -n;
  }
  return d;
}

std::string deltaText(double before, double after) {
  double delta = after - before;
  std::string pct = before != 0 ? fmt::format(", {:+.1f}%", 100.0 * delta / before) : "";
  return fmt::format("{} -> {} ({:+}{})", formatNumber(before), formatNumber(after), delta, pct);
}

void printSummary(const DiffSummary& d) {
  std::cout << "summary:\n";
  std::cout << fmt::format("  strategies changed: {}\n", d.strategies.size());
  for (const auto& [op, x, y] : d.strategies) std::cout << fmt::format("    {}: {} -> {}\n", op, x, y);
  if (d.sentBefore != d.sentAfter)
    std::cout << fmt::format("  pipeline stage boundary moved: sends [{}] -> [{}]\n", fmt::join(d.sentBefore, ", "),
                             fmt::join(d.sentAfter, ", "));
  std::vector<std::string> changes;
  for (const auto& [t, n] : d.added) changes.push_back(fmt::format("+{} {}", n, t));
  for (const auto& [t, n] : d.removed) changes.push_back(fmt::format("-{} {}", n, t));
  std::cout << fmt::format("  inserted ops: {}\n", changes.empty() ? "no change" : fmt::format("{}", fmt::join(changes, ", ")));
  std::cout << fmt::format("  communication bytes per rank: {}\n",
                           deltaText(d.before.commBytesPerRank, d.after.commBytesPerRank));
  std::cout << fmt::format("  parameter bytes per rank: {}\n", deltaText(d.before.paramBytesPerRank, d.after.paramBytesPerRank));
  if (d.before.gradBytesPerRank != 0 || d.after.gradBytesPerRank != 0)
    std::cout << fmt::format("  gradient bytes per rank: {}\n", deltaText(d.before.gradBytesPerRank, d.after.gradBytesPerRank));
  std::cout << fmt::format("  inserted ops in all: {}\n", deltaText(d.before.insertedOps, d.after.insertedOps));
}

nlohmann::ordered_json summaryJson(const DiffSummary& d, const std::vector<std::string>& paths) {
  using json = nlohmann::ordered_json;
  json j;
  j["a"] = paths[0];
  j["b"] = paths[1];
  json strategies = json::array();
  for (const auto& [op, x, y] : d.strategies) strategies.push_back({{"op", op}, {"before", x}, {"after", y}});
  j["strategies_changed"] = strategies;
  if (d.sentBefore != d.sentAfter) j["pipeline_sends"] = {{"before", d.sentBefore}, {"after", d.sentAfter}};
  j["inserted_ops_added"] = d.added;
  j["inserted_ops_removed"] = d.removed;
  auto total = [](double x, double y) {
    json t = {{"before", x}, {"after", y}, {"delta", y - x}};
    t["percent"] = x != 0 ? json(100.0 * (y - x) / x) : json(nullptr);
    return t;
  };
  j["totals"] = {{"comm_bytes_per_rank", total(d.before.commBytesPerRank, d.after.commBytesPerRank)},
                 {"param_bytes_per_rank", total(d.before.paramBytesPerRank, d.after.paramBytesPerRank)},
                 {"grad_comm_bytes_per_rank", total(d.before.gradBytesPerRank, d.after.gradBytesPerRank)},
                 {"inserted_ops", total(d.before.insertedOps, d.after.insertedOps)}};
  return j;
}

// `--parallel`: only what parallelism decides, from the last dump of each side (validate when
// there is one), so that irc's dump can be held against MindSpore's own.
ExitStatus diffParallel(const Stages& a, const Stages& b, const std::vector<std::string>& paths) {
  const std::string *ta = stageText(a, {"validate", "step_parallel_end"}, true),
                    *tb = stageText(b, {"validate", "step_parallel_end"}, true);
  ParallelFacts fa = readParallelFacts(ta ? *ta : ""), fb = readParallelFacts(tb ? *tb : "");
  auto split = [](const ParallelFacts& f, ParallelFacts& apart) {
    ParallelFacts main;
    main.skippedLines = f.skippedLines;
    for (const auto& fact : f.facts) (fact.kind == ParallelFact::Kind::Apart ? apart : main).facts.push_back(fact);
    return main;
  };
  ParallelFacts apartA, apartB;
  ParallelFacts ma = split(fa, apartA), mb = split(fb, apartB);
  std::vector<std::string> lines = diffParallelFacts(ma, mb);
  std::cout << fmt::format("--- {} ({} nodes, {} lines skipped)\n+++ {} ({} nodes, {} lines skipped)\n", paths[0],
                           ma.facts.size(), ma.skippedLines, paths[1], mb.facts.size(), mb.skippedLines);
  for (const auto& line : lines) std::cout << line << "\n";
  for (const auto& [side, apart] : {std::pair{paths[0], &apartA}, std::pair{paths[1], &apartB}})
    if (!apart->facts.empty()) {
      std::cout << fmt::format("apart in {} (mirrors, virtual dataset/div):\n", side);
      for (const auto& f : apart->facts) std::cout << "  " << f.text() << "\n";
    }
  std::cout << (lines.empty() ? "no differences\n"
                              : fmt::format("{} difference{}\n", lines.size(), lines.size() == 1 ? "" : "s"));
  return lines.empty() ? ExitStatus::Ok : ExitStatus::Differs;
}

}  // namespace

ExitStatus runDiff(const std::vector<std::string>& args) {
  const CommandSpec& spec = commandSpec("diff");
  ArgScanner scan(args, flagsWithValue(spec), switchFlags(spec));
  std::vector<std::string> paths;
  int64_t rank = 0;
  ColorMode color = ColorMode::Auto;
  bool stat = false, json = false, allStages = false, parallel = false;
  while (!scan.done()) {
    auto item = scan.next();
    if (item.flag.empty()) paths.push_back(item.value);
    else if (item.flag == "--rank") {
      rank = parseIntArg(item.flag, item.value);
      if (rank < 0) throw UsageError(fmt::format("--rank {} is not a rank: ranks count from 0", rank));
    } else if (item.flag == "--color") color = parseColorMode(item.value);
    else if (item.flag == "--stat") stat = true;
    else if (item.flag == "--json") json = true;
    else if (item.flag == "--all-stages") allStages = true;
    else if (item.flag == "--parallel") parallel = true;
  }
  if (paths.size() != 2) throw UsageError("usage: irc diff A B [--rank R]   (two .ir dumps, two dump dirs or two models)");
  for (const auto& p : paths)
    if (p != "-" && !fs::exists(p)) throw UsageError(fmt::format("'{}' does not exist", p));

  Stages a, b;
  if (isModel(paths[0]) && isModel(paths[1])) {
    auto sa = stagesOfModel(paths[0], rank, color), sb = stagesOfModel(paths[1], rank, color);
    if (!sa || !sb) return ExitStatus::Rejected;
    a = *sa;
    b = *sb;
  } else if (fs::is_directory(paths[0]) && fs::is_directory(paths[1])) {
    auto sa = stagesOfDir(paths[0], rank), sb = stagesOfDir(paths[1], rank);
    if (!sa || !sb) return ExitStatus::Rejected;
    a = *sa;
    b = *sb;
  } else if (fs::is_regular_file(paths[0]) && fs::is_regular_file(paths[1]) && !isModel(paths[0]) && !isModel(paths[1])) {
    auto ta = dumpTextOf(paths[0]), tb = dumpTextOf(paths[1]);
    if (!ta || !tb) return ExitStatus::Rejected;
    a[stageKey(0, "dump")] = *ta;
    b[stageKey(0, "dump")] = *tb;
  } else {
    throw UsageError("irc diff compares two of a kind: two .ir dumps, two dump directories or two models");
  }

  if (parallel) return diffParallel(a, b, paths);
  DiffSummary summary = summarize(a, b);
  if (json) {
    std::cout << summaryJson(summary, paths).dump(2) << "\n";
    return summary.changed() || !sameStages(a, b) ? ExitStatus::Differs : ExitStatus::Ok;
  }
  std::cout << fmt::format("--- {}\n+++ {}\n", paths[0], paths[1]);
  printSummary(summary);
  if (stat) return summary.changed() || !sameStages(a, b) ? ExitStatus::Differs : ExitStatus::Ok;

  // Per stage, each difference once, at the first stage where it shows (--all-stages: every).
  size_t differences = 0;
  std::set<std::string> shown;
  for (const auto& [stage, text] : a) {
    if (!b.contains(stage)) {
      std::cout << fmt::format("== {}: only in {}\n", stageName(stage), paths[0]);
      ++differences;
      continue;
    }
    std::vector<std::string> lines;
    for (const auto& line : diffIrText(text, b.at(stage)).lines)
      if (allStages || shown.insert(line).second) lines.push_back(line);
    if (lines.empty()) continue;
    std::cout << fmt::format("== {}\n", stageName(stage));
    for (const auto& line : lines) std::cout << line << "\n";
    differences += lines.size();
  }
  for (const auto& [stage, text] : b)
    if (!a.count(stage)) {
      std::cout << fmt::format("== {}: only in {}\n", stageName(stage), paths[1]);
      ++differences;
    }
  std::cout << (differences == 0 ? "no differences\n"
                                 : fmt::format("{} difference{}\n", differences, differences == 1 ? "" : "s"));
  return differences == 0 ? ExitStatus::Ok : ExitStatus::Differs;
}

}  // namespace irc::cli
