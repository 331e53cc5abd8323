// `irc explain MODEL NAME [--rank R] [--search-mode M] [--redistribution P]`.
#include <iostream>

#include <fmt/format.h>

#include "dumps/explain.h"
#include "ir/suggest.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "tools/cli_util.h"
#include "tools/commands.h"

namespace irc::cli {

int runExplain(const std::vector<std::string>& args) {
  ArgScanner scan(args, {"--rank", "--search-mode", "--redistribution", "--color"}, {});
  std::vector<std::string> positional;
  std::optional<int64_t> rank;
  ParallelOverrides overrides;
  ColorMode color = ColorMode::Auto;
  while (!scan.done()) {
    auto item = scan.next();
    if (item.flag.empty()) positional.push_back(item.value);
    else if (item.flag == "--rank") rank = parseIntArg(item.flag, item.value);
    else if (item.flag == "--color") color = parseColorMode(item.value);
    else if (item.flag == "--search-mode") overrides.searchMode = parseSearchModeArg(item.flag, item.value);
    else if (item.flag == "--redistribution") overrides.redistribution = parseRedistributionArg(item.flag, item.value);
  }
  if (positional.size() != 2) throw UsageError("usage: irc explain MODEL.yaml NAME [--rank R]");
  const std::string& model = positional[0];
  auto loaded = loadModelOrReport(model, color, overrides);
  if (!loaded) return 1;
  Graph* graph = &loaded->graph;
  DiagnosticEngine& diags = *loaded->diags;
  int64_t r = rank.value_or(graph->parallel.globalRank);
  if (r < 0 || r >= graph->parallel.deviceNum)
    throw UsageError(fmt::format("--rank {} is not a rank of {} devices", r, graph->parallel.deviceNum));
  PassManager manager;
  schedulePipeline(manager, graph->parallel, {}, "redistribution");
  PassContext context{diags};
  if (manager.run(*graph, context) == RunOutcome::Rejected) {
    diags.render(std::cerr, useColor(color, stderr));
    return 1;
  }
  if (auto explanation = explainOp(*graph, positional[1], r)) {
    std::cout << *explanation;
    return 0;
  }
  std::vector<std::string> names;
  for (OpId id : graph->order) names.push_back(graph->op(id).name);
  throw UsageError(fmt::format("'{}' names no op of {}{}", positional[1], graph->name, didYouMean(positional[1], names)));
}

}  // namespace irc::cli
