// `irc verify MODEL`: compile for every rank with the same pipeline as `--all-ranks`, then run
// all ranks against the single-device program (verify/spmd_simulator.h). Exit 3 on a mismatch.
#include <algorithm>
#include <cmath>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontends/npz_reader.h"
#include "ir/limits.h"
#include "ir/suggest.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"
#include "verify/spmd_simulator.h"
#include "cli/cli_util.h"
#include "cli/command_specs.h"
#include "cli/commands.h"
#include "ops/op_defs.h"

namespace irc::cli {
namespace {

// How two numbers are judged equal, printed under every verdict so that a reader knows what
// "agree" meant.
std::string toleranceLine(const VerifyOptions& options) {
  return fmt::format(
      "irc verify: tolerance: |got - expected| <= {:g} + {:g} * max(|expected|, the value's largest "
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

// The default tolerance against --expect: irc's reference is float64, the expectation usually a
// float32 run (onnxruntime's); numpy.allclose's defaults are of the same order.
constexpr double kExpectRtol = 1e-4, kExpectAtol = 1e-5;

// Binds the arrays of an .npz to the graph's inputs (required) and parameters (optional) by
// name, checking shape and dtype class; the error names what is wrong and what would be valid.
bool bindInputs(const Graph& g, const std::string& path, std::map<ValueId, TensorValue>& given, std::string& error) {
  auto arrays = readNpz(path, error);
  if (!arrays) return false;
  std::map<std::string, ValueId> byName;
  std::vector<std::string> inputNames;
  for (ValueId v : g.inputs) byName[g.value(v).name] = v, inputNames.push_back(g.value(v).name);
  for (ValueId v : g.parameters) byName[g.value(v).name] = v;
  for (auto& [name, array] : *arrays) {
    auto it = byName.find(name);
    if (it == byName.end()) {
      error = fmt::format("{}: array '{}' names no input or parameter of the graph; its inputs: {}", path, name,
                          joinNames(inputNames));
      return false;
    }
    const TensorType& type = g.value(it->second).type;
    if (array.value.shape != type.shape) {
      error = fmt::format("{}: array '{}' has shape {}; the graph's '{}' is {}", path, name, formatShape(array.value.shape), name,
                          formatShape(type.shape));
      return false;
    }
    if (isFloat(array.dtype) != isFloat(type.dtype)) {
      error = fmt::format("{}: array '{}' is {}; the graph's '{}' is {}", path, name, modelName(array.dtype), name,
                          modelName(type.dtype));
      return false;
    }
    given[it->second] = std::move(array.value);
  }
  for (ValueId v : g.inputs)
    if (!given.count(v)) {
      error = fmt::format("{}: no array for the graph input '{}' (it has {})", path, g.value(v).name, joinNames(inputNames));
      return false;
    }
  return true;
}

// Compares the reference's outputs with the expected arrays; prints one line per output and
// returns false on a mismatch (or an error in `error`).
bool compareWithExpected(const Graph& g, const std::map<ValueId, TensorValue>& outputs, const std::string& path, double rtol,
                         double atol, std::string& error) {
  auto arrays = readNpz(path, error);
  if (!arrays) return false;
  bool ok = true;
  std::vector<std::string> outputNames;
  for (ValueId v : g.outputs) outputNames.push_back(g.value(v).name);
  for (const auto& [name, array] : *arrays)
    if (std::find(outputNames.begin(), outputNames.end(), name) == outputNames.end()) {
      error = fmt::format("{}: array '{}' names no output of the graph; its outputs: {}", path, name, joinNames(outputNames));
      return false;
    }
  for (ValueId v : g.outputs) {
    const std::string& name = g.value(v).name;
    auto expected = arrays->find(name);
    if (expected == arrays->end()) {
      error = fmt::format("{}: no array for the graph output '{}' (it has {})", path, name, joinNames(outputNames));
      return false;
    }
    auto got = outputs.find(v);
    if (got == outputs.end()) throw InternalError(fmt::format("verify kept no reference value for output '{}'", name));
    if (expected->second.value.shape != got->second.shape) {
      error = fmt::format("{}: array '{}' has shape {}; the graph's output is {}", path, name,
                          formatShape(expected->second.value.shape), formatShape(got->second.shape));
      return false;
    }
    double maxAbs = 0, maxRel = 0;
    int64_t bad = 0, firstBad = -1;
    const auto& e = expected->second.value.data;
    const auto& a = got->second.data;
    for (size_t i = 0; i < e.size(); ++i) {
      double diff = std::fabs(a[i] - e[i]);
      bool close = diff <= atol + rtol * std::fabs(e[i]) || (std::isnan(a[i]) && std::isnan(e[i])) || a[i] == e[i];
      if (!std::isnan(diff)) {
        maxAbs = std::max(maxAbs, diff);
        if (e[i] != 0) maxRel = std::max(maxRel, diff / std::fabs(e[i]));
      }
      if (!close && bad++ == 0) firstBad = static_cast<int64_t>(i);
    }
    std::cout << fmt::format(
        "irc verify: output '{}' against {}: max abs error {:.3g}, max rel error {:.3g}{}\n", name, path, maxAbs, maxRel,
        bad == 0 ? ""
                 : fmt::format(" - MISMATCH: {} of {} elements outside the tolerance, first at flat index {} "
                               "(got {}, expected {})",
                               bad, e.size(), firstBad, a[firstBad], e[firstBad]));
    ok = ok && bad == 0;
  }
  std::cout << fmt::format("irc verify: tolerance against --expect: |got - expected| <= {:g} + {:g} * |expected|\n", atol, rtol);
  return ok;
}

// The names of `values`, for messages.
std::vector<std::string> namesOf(const Graph& g, const std::vector<ValueId>& values) {
  std::vector<std::string> names;
  for (ValueId v : values) names.push_back(g.value(v).name);
  return names;
}

}  // namespace

namespace {

struct VerifyArgs {
  std::string model;
  VerifyOptions options;
  ParallelOverrides overrides;
  ColorMode color = ColorMode::Auto;
  int64_t maxRanks = kDefaultMaxRanks;
  std::string inputsPath, expectPath;
  std::optional<double> rtol, atol;
};

VerifyArgs parseVerifyArgs(const std::vector<std::string>& args) {
  const CommandSpec& spec = commandSpec("verify");
  ArgScanner scan(args, flagsWithValue(spec), switchFlags(spec));
  VerifyArgs a;
  while (!scan.done()) {
    auto item = scan.next();
    const std::string& f = item.flag;
    if (f.empty()) {
      if (!a.model.empty()) throw UsageError("irc verify takes one model");
      a.model = item.value;
    } else if (f == "--seed") {
      a.options.seed = static_cast<uint64_t>(parseIntArg(f, item.value));
    } else if (f == "--max-ranks") {
      a.maxRanks = parsePositiveIntArg(f, item.value);
    } else if (f == "--rtol") {
      a.rtol = parseSecondsArg(f, item.value);
    } else if (f == "--atol") {
      a.atol = parseSecondsArg(f, item.value);
    } else if (f == "--inputs") {
      a.inputsPath = item.value;
    } else if (f == "--expect") {
      a.expectPath = item.value;
    } else if (takeGraphFlag(f, item.value, a.overrides)) {
    } else if (f == "--search-mode") {
      a.overrides.searchMode = parseSearchModeArg(f, item.value);
    } else if (f == "--redistribution") {
      a.overrides.redistribution = parseRedistributionArg(f, item.value);
    } else if (f == "--color") {
      a.color = parseColorMode(item.value);
    }
  }
  if (a.model.empty())
    throw UsageError("usage: irc verify MODEL.yaml [--seed N] [--inputs IN.npz [--expect OUT.npz]] [--rtol X] [--atol X]");
  if (!a.expectPath.empty() && a.inputsPath.empty())
    throw UsageError("--expect compares outputs computed from --inputs: give --inputs IN.npz too");
  if (a.rtol) a.options.rtol = *a.rtol;
  if (a.atol) a.options.atol = *a.atol;
  // An ONNX file's own weights where the inputs are given: the outputs are then the file's.
  a.overrides.keepParameterData = !a.inputsPath.empty();
  return a;
}

// Random integers that become indices through other ops (RoBERTa's position ids, a cumsum of the
// ids) can fall outside a table: every integer input constant (0, 1, 2, 3) is tried before giving
// up, and the note says so. False (with the error printed) when no value runs.
bool retryWithConstantIntegers(const Graph& original, const Graph& global, const std::map<int64_t, Graph>& locals,
                               const VerifyOptions& options, const std::map<ValueId, TensorValue>& given, VerifyResult& r,
                               std::map<ValueId, TensorValue>& constantIntegers, std::string& integersNote) {
  std::vector<ValueId> integers;
  for (ValueId v : original.inputs)
    if (isInteger(original.value(v).type.dtype)) integers.push_back(v);
  std::string firstProblem = r.problem;
  for (int c = 0; c < 4 && !r.problem.empty() && !integers.empty(); ++c) {
    constantIntegers = given;
    for (ValueId v : integers) {
      TensorValue t = TensorValue::zeros(original.value(v).type.shape);
      std::fill(t.data.begin(), t.data.end(), static_cast<double>(c));
      constantIntegers[v] = std::move(t);
    }
    VerifyOptions retry = options;
    retry.given = &constantIntegers;
    r = simulateAndCompare(original, global, locals, retry);
    if (r.problem.empty()) integersNote = fmt::format(", integer inputs {}", c);
    if (r.problem.empty())
      std::cerr << fmt::format(
          "irc verify: note: with random integers the reference run failed ({}); every integer input "
          "({}) is {} instead: give other values with --inputs\n",
          firstProblem, fmt::join(namesOf(original, integers), ", "), c);
  }
  if (r.problem.empty()) return true;
  std::cerr << fmt::format(
      "irc verify: error: the reference run failed: {}{}\n", firstProblem,
      integers.empty() ? "" : fmt::format("; give the values of {} with --inputs", fmt::join(namesOf(original, integers), ", ")));
  return false;
}

// The verdict on stdout, then the outputs against --expect's.
ExitStatus reportVerdict(const VerifyArgs& a, const Graph& original, const std::string& name, size_t ranks, const VerifyResult& r,
                         const std::string& integersNote) {
  if (!r.ok) {
    std::cout << fmt::format("irc verify: {}: MISMATCH at op '{}' on rank {}, element [{}]: got {}, expected {} (seed {})\n",
                             name, r.op, r.rank, fmt::join(r.element, ", "), r.got, r.expected, a.options.seed);
    std::cout << toleranceLine(a.options);
    return ExitStatus::VerifyMismatch;
  }
  std::cout << fmt::format(
      "irc verify: {}: all {} ranks agree with the single-device program on {} values "
      "(max abs error {:.3g}, max rel error {:.3g}; {})\n",
      name, ranks, r.comparedValues, r.maxAbsError, r.maxRelError,
      a.inputsPath.empty() ? fmt::format("seed {}{}", a.options.seed, integersNote) : "inputs from " + a.inputsPath);
  std::cout << toleranceLine(a.options);
  std::cout << opaqueLine(original);
  if (a.expectPath.empty()) return ExitStatus::Ok;
  std::string error;
  bool matched =
      compareWithExpected(original, r.outputs, a.expectPath, a.rtol.value_or(kExpectRtol), a.atol.value_or(kExpectAtol), error);
  if (!error.empty()) {
    std::cerr << "irc verify: error: " << error << "\n";
    return ExitStatus::Rejected;
  }
  return matched ? ExitStatus::Ok : ExitStatus::VerifyMismatch;
}

}  // namespace

ExitStatus runVerify(const std::vector<std::string>& args) {
  VerifyArgs a = parseVerifyArgs(args);
  VerifyOptions& options = a.options;
  auto loaded = loadModelOrReport(a.model, a.color, a.overrides);
  if (!loaded) return ExitStatus::Rejected;
  Graph* graph = &loaded->graph;
  DiagnosticEngine& diags = *loaded->diags;
  CompileOptions compileOptions = loaded->options;
  if (!searchConfigurationOrReport(*loaded, compileOptions, a.color)) return ExitStatus::Rejected;
  if (compileOptions.rankCount() > a.maxRanks)
    throw UsageError(
        fmt::format("irc verify simulates every rank: {} devices is past the limit of {} (raise it with "
                    "--max-ranks N)",
                    compileOptions.rankCount(), a.maxRanks));
  compileOptions.ranks = compileOptions.everyRank();
  std::map<ValueId, TensorValue> given = std::move(loaded->parameterData);
  if (!a.inputsPath.empty()) {
    std::string error;
    if (!bindInputs(*graph, a.inputsPath, given, error)) {
      std::cerr << "irc verify: error: " << error << "\n";
      return ExitStatus::Rejected;
    }
    options.given = &given;
    options.keepOutputs = !a.expectPath.empty();
  }
  Graph original = *graph;
  std::map<int64_t, Graph> locals;
  PassContext context{diags};
  CompileHooks hooks;
  hooks.rankGraphs = [&](int64_t rank, Graph&& local) { locals.emplace(rank, std::move(local)); };
  if (compileWithSearch(*graph, compileOptions, context, hooks) == RunOutcome::Rejected) {
    diags.render(std::cerr, useColor(a.color, stderr));
    return ExitStatus::Rejected;
  }
  VerifyResult r = simulateAndCompare(original, *graph, locals, options);
  std::map<ValueId, TensorValue> constantIntegers;
  std::string integersNote;  // how the integer inputs were made, when not at random
  if (!r.problem.empty() && a.inputsPath.empty() &&
      !retryWithConstantIntegers(original, *graph, locals, options, given, r, constantIntegers, integersNote))
    return ExitStatus::Rejected;
  if (!r.problem.empty()) {
    std::cerr << fmt::format("irc verify: error: the reference run failed: {}\n", r.problem);
    return ExitStatus::Rejected;
  }
  return reportVerdict(a, original, graph->name, locals.size(), r, integersNote);
}

}  // namespace irc::cli
