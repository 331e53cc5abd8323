// `irc explain MODEL NAME [--rank R] [--pass PASS] [--search-mode M] [--redistribution P]`, or
// `irc explain MODEL --search` / `--time`.
#include <iostream>

#include <fmt/format.h>

#include "dumps/explain.h"
#include "dumps/ir_printer.h"
#include "dumps/time_explain.h"
#include "ir/suggest.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"
#include "passes/pipeline/pipeline.h"
#include "cli/cli_util.h"
#include "cli/command_specs.h"
#include "cli/commands.h"

namespace irc::cli {
namespace {

// The text of one dump, captured as the pipeline runs (rank `rank`'s view).
class DumpCapture : public PassInstrumentation {
 public:
  DumpCapture(std::string dumpName, int64_t rank, const ParallelSettings& settings)
      : dumpName_(std::move(dumpName)), rank_(rank), settings_(settings) {}
  void afterPass(const PassStage& stage, const Graph& graph) override { take(stage.dumpName, graph); }
  void afterRankPass(const PassStage& stage, const Graph& graph, int64_t rank) override {
    if (rank == rank_) take(stage.dumpName, graph);
  }
  std::string text;

 private:
  void take(std::string_view dumpName, const Graph& graph) {
    if (dumpName != dumpName_) return;
    PrintOptions options;
    options.rank = rank_;
    options.settings = &settings_;
    text = printGraph(graph, options);
  }
  std::string dumpName_;
  int64_t rank_;
  const ParallelSettings& settings_;
};

// The node a dump prints as `%N`: its printed name, with the TupleGetItem / MakeTuple suffixes
// a printed-only node carries taken off (they explain the op they belong to).
std::optional<std::string> printedNodeName(const std::string& dump, const std::string& ref) {
  std::string head = "  " + ref + "(";
  for (size_t at = dump.find(head); at != std::string::npos; at = dump.find(head, at + 1)) {
    if (at != 0 && dump[at - 1] != '\n') continue;
    size_t open = at + head.size(), close = dump.find(") = ", open);
    if (close == std::string::npos) return std::nullopt;
    std::string name = dump.substr(open, close - open);
    for (const char* suffix : {".make_tuple", ".getitem."}) {
      size_t p = name.rfind(suffix);
      if (p != std::string::npos) name = name.substr(0, p);
    }
    return name;
  }
  return std::nullopt;
}

// `--search`: what search_mode auto chose and why the best others lost.
ExitStatus explainSearch(const std::vector<std::string>& positional, const ParallelOverrides& overrides, ColorMode color) {
  if (positional.size() != 1) throw UsageError("usage: irc explain MODEL.yaml --search");
  auto loaded = loadModelOrReport(positional[0], color, overrides);
  if (!loaded) return ExitStatus::Rejected;
  CompileOptions options = loaded->options;
  if (!searchConfigurationOrReport(*loaded, options, color)) return ExitStatus::Rejected;
  if (!loaded->graph.search) {
    // The operator-level search runs inside the pipeline: compile through propagation.
    options.stopAfter = "sharding_propagation";
    PassContext context{*loaded->diags};
    if (compileWithSearch(loaded->graph, options, context, {}) == RunOutcome::Rejected) {
      loaded->diags->render(std::cerr, useColor(color, stderr));
      return ExitStatus::Rejected;
    }
  }
  if (!loaded->graph.search) {
    std::cerr << fmt::format("irc explain: {} is not compiled with search_mode auto (it is {})\n", positional[0],
                             searchModeName(options.searchMode));
    return ExitStatus::Rejected;
  }
  std::cout << explainSearchText(*loaded->graph.search);
  return ExitStatus::Ok;
}

// `--time`: where the predicted step goes (dumps/time_explain.h).
ExitStatus explainTime(const std::vector<std::string>& positional, const ParallelOverrides& overrides, ColorMode color) {
  if (positional.size() != 1) throw UsageError("usage: irc explain MODEL.yaml --time");
  auto loaded = loadModelOrReport(positional[0], color, overrides);
  if (!loaded) return ExitStatus::Rejected;
  CompileOptions options = loaded->options;
  if (!options.cluster) {
    std::cerr << fmt::format("irc explain: --time needs a cluster: {} has no cluster block (docs/cluster.md)\n", positional[0]);
    return ExitStatus::Rejected;
  }
  if (!searchConfigurationOrReport(*loaded, options, color)) return ExitStatus::Rejected;
  options.stopAfter = "redistribution";
  PassContext context{*loaded->diags};
  if (compileWithSearch(loaded->graph, options, context, {}) == RunOutcome::Rejected) {
    loaded->diags->render(std::cerr, useColor(color, stderr));
    return ExitStatus::Rejected;
  }
  std::cout << explainTimeText(loaded->graph, options);
  return ExitStatus::Ok;
}

}  // namespace

ExitStatus runExplain(const std::vector<std::string>& args) {
  const CommandSpec& spec = commandSpec("explain");
  ArgScanner scan(args, flagsWithValue(spec), switchFlags(spec));
  std::vector<std::string> positional;
  std::optional<int64_t> rank;
  bool search = false, time = false;
  std::string pass = "step_parallel_end";
  ParallelOverrides overrides;
  ColorMode color = ColorMode::Auto;
  while (!scan.done()) {
    auto item = scan.next();
    if (item.flag.empty()) positional.push_back(item.value);
    else if (item.flag == "--rank") rank = parseIntArg(item.flag, item.value);
    else if (item.flag == "--color") color = parseColorMode(item.value);
    else if (item.flag == "--pass") pass = item.value;
    else if (item.flag == "--search") search = true;
    else if (item.flag == "--time") time = true;
    else if (takeGraphFlag(item.flag, item.value, overrides)) continue;
    else if (item.flag == "--search-mode") overrides.searchMode = parseSearchModeArg(item.flag, item.value);
    else if (item.flag == "--redistribution") overrides.redistribution = parseRedistributionArg(item.flag, item.value);
  }
  if (search) return explainSearch(positional, overrides, color);
  if (time) return explainTime(positional, overrides, color);
  if (positional.size() != 2)
    throw UsageError("usage: irc explain MODEL.yaml NAME [--rank R] [--pass PASS] | irc explain MODEL.yaml --search");
  const PipelineStage* stage = findStage(pass);
  if (!stage)
    throw UsageError(
        fmt::format("--pass: unknown pass '{}'{}; valid: {}", pass, didYouMean(pass, stageNames()), joinNames(stageNames())));
  const std::string& model = positional[0];
  auto loaded = loadModelOrReport(model, color, overrides);
  if (!loaded) return ExitStatus::Rejected;
  Graph* graph = &loaded->graph;
  DiagnosticEngine& diags = *loaded->diags;
  CompileOptions options = loaded->options;
  if (!searchConfigurationOrReport(*loaded, options, color)) return ExitStatus::Rejected;
  int64_t r = rank.value_or(options.globalRank);
  if (r < 0 || r >= options.rankCount())
    throw UsageError(fmt::format("--rank {} is not a rank of {} devices", r, options.rankCount()));
  std::string name = positional[1];
  bool byNumber = name.size() > 1 && name[0] == '%' && name.find_first_not_of("0123456789", 1) == std::string::npos;
  // A %N needs the dump it refers to: run through that pass (validate is per rank) as well.
  options.stopAfter = byNumber && stage->position > 3 ? "" : "redistribution";
  options.ranks = {r};
  DumpCapture capture(stage->dumpName, r, options);
  CompileHooks hooks;
  if (byNumber) hooks.instrumentations.push_back(&capture);
  PassContext context{diags};
  if (compileWithSearch(*graph, options, context, hooks) == RunOutcome::Rejected) {
    diags.render(std::cerr, useColor(color, stderr));
    return ExitStatus::Rejected;
  }
  if (byNumber) {
    auto printed = printedNodeName(capture.text, name);
    if (!printed) throw UsageError(fmt::format("the {} dump of {} has no node {}", stage->dumpName, graph->name, name));
    name = *printed;
    for (OpId id : graph->order)
      if (graph->op(id).printedName == name) name = graph->op(id).name;  // a replaced op prints under its new name
  }
  if (auto explanation = explainOp(*graph, name, r, &options)) {
    std::cout << *explanation;
    return ExitStatus::Ok;
  }
  std::vector<std::string> names;
  for (OpId id : graph->order) names.push_back(graph->op(id).name);
  throw UsageError(fmt::format("'{}' names no op of {}{}", name, graph->name, didYouMean(name, names)));
}

}  // namespace irc::cli
