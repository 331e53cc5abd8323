// `irc verify MODEL`: compile for every rank with the same pipeline as `--all-ranks`, then run
// all ranks against the single-device program (passes/spmd_simulator.h). Exit 3 on a mismatch.
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/limits.h"
#include "ir/suggest.h"
#include "passes/compile.h"
#include "passes/spmd_simulator.h"
#include "tools/cli_util.h"
#include "tools/command_specs.h"
#include "tools/commands.h"
#include "ops/op_defs.h"

namespace irc::cli {
namespace {

// How two numbers are judged equal, printed under every verdict so that a reader knows what
// "agree" meant.
std::string toleranceLine(const VerifyOptions& options) {
  return fmt::format("irc verify: tolerance: |got - expected| <= {:g} + {:g} * max(|expected|, the value's largest "
                     "|expected|); equal infinities and NaN against NaN agree\n",
                     options.atol, options.rtol);
}

// Opaque ops (ONNX nodes kept with --opaque-unsupported) run as placeholders: what they compute
// is not checked, only that every rank agrees with the single-device program around them.
std::string opaqueLine(const Graph& g) {
  std::vector<std::string> names;
  for (OpId id : g.order)
    if (familyOf(g.op(id)) == OpFamily::Opaque)
      names.push_back(fmt::format("'{}' ({})", g.op(id).name, std::get<std::string>(g.op(id).attrs.at("op_type"))));
  if (names.empty()) return "";
  return fmt::format("irc verify: {} opaque op{} not checked (their results are placeholders; what follows them is): {}\n",
                     names.size(), names.size() == 1 ? "" : "s", joinNames(names));
}

}  // namespace

int runVerify(const std::vector<std::string>& args) {
  const CommandSpec& spec = commandSpec("verify");
  ArgScanner scan(args, flagsWithValue(spec), switchFlags(spec));
  std::string model;
  VerifyOptions options;
  ParallelOverrides overrides;
  ColorMode color = ColorMode::Auto;
  int64_t maxRanks = kDefaultMaxRanks;
  while (!scan.done()) {
    auto item = scan.next();
    const std::string& f = item.flag;
    if (f.empty()) {
      if (!model.empty()) throw UsageError("irc verify takes one model");
      model = item.value;
    } else if (f == "--seed") {
      options.seed = static_cast<uint64_t>(parseIntArg(f, item.value));
    } else if (f == "--max-ranks") {
      maxRanks = parsePositiveIntArg(f, item.value);
    } else if (f == "--rtol") {
      options.rtol = parseSecondsArg(f, item.value);
    } else if (f == "--atol") {
      options.atol = parseSecondsArg(f, item.value);
    } else if (takeGraphFlag(f, item.value, overrides)) {
    } else if (f == "--search-mode") {
      overrides.searchMode = parseSearchModeArg(f, item.value);
    } else if (f == "--redistribution") {
      overrides.redistribution = parseRedistributionArg(f, item.value);
    } else if (f == "--color") {
      color = parseColorMode(item.value);
    }
  }
  if (model.empty()) throw UsageError("usage: irc verify MODEL.yaml [--seed N] [--rtol X] [--atol X]");
  auto loaded = loadModelOrReport(model, color, overrides);
  if (!loaded) return 1;
  Graph* graph = &loaded->graph;
  DiagnosticEngine& diags = *loaded->diags;
  CompileOptions compileOptions = loaded->options;
  if (compileOptions.deviceNum > maxRanks)
    throw UsageError(fmt::format("irc verify simulates every rank: {} devices is past the limit of {} (raise it with "
                                 "--max-ranks N)",
                                 compileOptions.deviceNum, maxRanks));
  compileOptions.ranks = compileOptions.everyRank();
  Graph original = *graph;
  std::map<int64_t, Graph> locals;
  PassContext context{diags};
  CompileHooks hooks;
  hooks.rankGraphs = [&](int64_t rank, Graph&& local) { locals.emplace(rank, std::move(local)); };
  if (compile(*graph, compileOptions, context, hooks) == RunOutcome::Rejected) {
    diags.render(std::cerr, useColor(color, stderr));
    return 1;
  }
  VerifyResult r = simulateAndCompare(original, *graph, locals, options);
  if (!r.problem.empty()) {
    std::cerr << fmt::format("irc verify: error: the reference run failed: {}\n", r.problem);
    return 1;
  }
  if (!r.ok) {
    std::cout << fmt::format("irc verify: {}: MISMATCH at op '{}' on rank {}, element [{}]: got {}, expected {} (seed {})\n",
                             graph->name, r.op, r.rank, fmt::join(r.element, ", "), r.got, r.expected, options.seed);
    std::cout << toleranceLine(options);
    return 3;
  }
  std::cout << fmt::format("irc verify: {}: all {} ranks agree with the single-device program on {} values "
                           "(max abs error {:.3g}, max rel error {:.3g}; seed {})\n",
                           graph->name, locals.size(), r.comparedValues, r.maxAbsError, r.maxRelError, options.seed);
  std::cout << toleranceLine(options);
  std::cout << opaqueLine(original);
  return 0;
}

}  // namespace irc::cli
