// ONNX's own node tests (Debian's libonnx-testdata) through irc: for every test whose model irc
// maps, load it, run irc's float64 reference on the test's inputs and match its expected outputs
// (rtol 1e-5); then compile it under a random valid strategy on 4 and 8 devices and check every
// rank against the single-device program, as `irc verify` does. A test irc cannot run that way
// (an op it has no op for, an output that folds) is loaded again with every input bound as a
// constant, and what the frontend folds is matched with the expected outputs.
//   irc_onnx_node_tests [DATA_DIR] [--verbose]
// DATA_DIR defaults to /usr/share/libonnx-testdata/data/node. Prints how many tests were run,
// matched and skipped (with why); exits 1 if any test that ran did not match or verify.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include "frontends/onnx/onnx_frontend.h"
#include "frontends/onnx/onnx_tensors.h"
#include "ops/reference_ops.h"
#include "passes/pipeline/compile.h"
#include "verify/spmd_simulator.h"
#include "ops/op_defs.h"

namespace fs = std::filesystem;
using namespace irc;

namespace {

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<TensorValue> readTensorFile(const fs::path& p, std::string& error) {
  onnx::TensorProto t;
  if (!t.ParseFromString(readFile(p))) {
    error = fmt::format("{} does not parse as a TensorProto", p.string());
    return std::nullopt;
  }
  return valueOfTensor(t, error);
}

// The single-device program on the given inputs; the value of every graph output.
std::optional<std::vector<TensorValue>> runReference(const Graph& g, const std::map<ValueId, TensorValue>& given,
                                                     std::string& error) {
  std::vector<std::optional<TensorValue>> values(g.values.size());
  for (const auto& [id, v] : given) values[id] = v;
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    std::vector<const TensorValue*> in;
    for (const Operand& o : op.operands) in.push_back(o.isValue() ? &*values[o.value] : nullptr);
    std::vector<TensorType> types;
    for (ValueId r : op.results) types.push_back(g.value(r).type);
    try {
      auto outs = evaluateOp(op, in, types);
      for (size_t i = 0; i < outs.size(); ++i) values[op.results[i]] = std::move(outs[i]);
    } catch (const ReferenceError& e) {
      error = fmt::format("op '{}': {}", op.name, e.what());
      return std::nullopt;
    }
  }
  std::vector<TensorValue> out;
  for (ValueId v : g.outputs) out.push_back(*values[v]);
  return out;
}

bool close(double got, double expected) {
  if (std::isnan(expected)) return std::isnan(got);
  if (std::isinf(expected)) return got == expected;
  return std::fabs(got - expected) <= 1e-6 + 1e-5 * std::fabs(expected);
}

// A random strategy for every tensor operand of the op: each dim split by a power of two that
// divides it, the product within the device count. The compile's own checks reject what the op
// does not allow, and the caller draws again.
ShardStrategy randomStrategy(const Graph& g, const Op& op, int64_t devices, std::mt19937& rng) {
  ShardStrategy s;
  int64_t budget = devices;
  for (const Operand& o : op.operands) {
    if (!o.isValue()) continue;
    IntTuple dims;
    for (int64_t d : g.value(o.value).type.shape) {
      std::vector<int64_t> choices{1};
      for (int64_t k = 2; k <= budget && d % k == 0; k *= 2) choices.push_back(k);
      int64_t pick = choices[std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng)];
      dims.push_back(pick);
    }
    s.push_back(dims);
    (void)budget;
  }
  return s;
}

// Compiles under a random valid strategy on `devices` devices and compares every rank with the
// single-device program. Returns "" when verified, else what went wrong.
std::string verifyUnderRandomStrategy(const Graph& loaded, int64_t devices, uint64_t seed, std::string& strategyShown) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  OpId target = kNoId;
  for (OpId id : loaded.order)
    if (strategyFormOf(defOf(loaded.op(id))) == StrategyForm::PerOperand && !ignoresConfiguredStrategy(defOf(loaded.op(id)))) {
      target = id;
      break;
    }
  for (int attempt = 0; attempt < 64; ++attempt) {
    Graph g = loaded;
    if (target != kNoId) {
      ShardStrategy s = attempt + 1 < 64 ? randomStrategy(g, g.op(target), devices, rng) : ShardStrategy{};
      int64_t used = 1;
      for (const IntTuple& t : s)
        for (int64_t k : t) used = std::max(used, k);
      // The first half of the draws wants a strategy that splits something, when the shapes allow.
      if (attempt < 32 && used == 1) continue;
      if (!s.empty()) g.op(target).annotation->inStrategy = s;
    }
    DiagnosticEngine diags("model.onnx", "");
    PassContext context{diags};
    // An ONNX graph has no parallel block: the run's settings are the compile's options.
    CompileOptions options;
    options.deviceNum = devices;
    options.searchMode = SearchMode::ShardingPropagation;
    options.fullyUseDevices = false;
    options.ranks = options.everyRank();
    Graph original = g;
    std::map<int64_t, Graph> locals;
    CompileHooks hooks;
    hooks.rankGraphs = [&](int64_t rank, Graph&& local) { locals.emplace(rank, std::move(local)); };
    if (compile(g, options, context, hooks) == RunOutcome::Rejected) continue;  // not valid for the op: draw again
    strategyShown = target == kNoId || !std::as_const(original).op(target).annotation->inStrategy ? "replicated" : [&] {
      std::string out;
      for (const IntTuple& t : *std::as_const(original).op(target).annotation->inStrategy)
        out += fmt::format("({})", fmt::join(t, ", "));
      return out;
    }();
    VerifyResult r = simulateAndCompare(original, g, locals, VerifyOptions{seed, 1e-9, 1e-12});
    if (!r.problem.empty()) return "reference: " + r.problem;
    if (!r.ok) return fmt::format("rank {} differs at op '{}': got {}, expected {}", r.rank, r.op, r.got, r.expected);
    return "";
  }
  return "no valid strategy found in 64 draws";
}

// The element-by-element comparison of one output with ONNX's expected one: "" when they match.
std::string compareOutput(const TensorValue& got, const TensorValue& expected, size_t output) {
  if (expected.data.size() != got.data.size())
    return fmt::format("output {} has {} elements; expected {}", output, got.data.size(), expected.data.size());
  for (size_t k = 0; k < expected.data.size(); ++k)
    if (!close(got.data[k], expected.data[k]))
      return fmt::format("output {} element {}: got {}, expected {}", output, k, got.data[k], expected.data[k]);
  return "";
}

// Binds the test's values of the graph inputs `wanted` selects (initializers are no inputs) as
// constants of `options`: the positions bound, and whether every selected value could be read.
struct BoundInputs {
  std::set<size_t> positions;
  bool allRead = true;
};
BoundInputs bindTestInputs(const fs::path& t, OnnxOptions& options,
                           const std::function<bool(const onnx::ValueInfoProto&)>& wanted) {
  onnx::ModelProto proto;
  proto.ParseFromString(readFile(t / "model.onnx"));
  std::set<std::string> initializers;
  for (const auto& i : proto.graph().initializer()) initializers.insert(i.name());
  BoundInputs bound;
  size_t position = 0;
  for (const auto& in : proto.graph().input()) {
    if (initializers.count(in.name())) continue;
    if (wanted(in)) {
      std::string problem;
      if (auto v = readTensorFile(t / "test_data_set_0" / fmt::format("input_{}.pb", position), problem)) {
        options.constantInputs[in.name()] = *v;
        bound.positions.insert(position);
      } else {
        bound.allRead = false;
      }
    }
    ++position;
  }
  return bound;
}

// Folding at import: every graph input bound to the test's value, so the whole graph is constant
// and the frontend folds it (with the ops irc maps or the evaluators of ops it has none for).
// nullopt when the model does not load that way either; "" when every output matched.
std::optional<std::string> checkFolded(const fs::path& t, const std::string& name) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(readFile(t / "model.onnx"))) return std::nullopt;
  OnnxOptions options{name, {}, true, true};
  std::map<std::string, TensorValue> constantOutputs;
  options.constantOutputs = &constantOutputs;
  if (!bindTestInputs(t, options, [](const onnx::ValueInfoProto&) { return true; }).allRead) return std::nullopt;
  DiagnosticEngine diags((t / "model.onnx").string(), "");
  auto loaded = loadOnnxModel(readFile(t / "model.onnx"), diags, options);
  if (!loaded || constantOutputs.size() != static_cast<size_t>(proto.graph().output_size())) return std::nullopt;
  for (int i = 0; i < proto.graph().output_size(); ++i) {
    std::string problem;
    auto expected = readTensorFile(t / "test_data_set_0" / fmt::format("output_{}.pb", i), problem);
    if (!expected) return problem;
    std::string why = compareOutput(constantOutputs.at(proto.graph().output(i).name()), *expected, i);
    if (!why.empty()) return why;
  }
  return "";
}

std::string skipReason(const std::string& diagnostic) {
  // "... (Foo): irc does not map Foo; ..." -> one bucket per kind of reason.
  if (diagnostic.find("which irc does not map") != std::string::npos) return "op type not mapped";
  if (diagnostic.find("evaluates it only where its inputs are constants") != std::string::npos)
    return "computed input of a constant-only op";
  if (diagnostic.find("element type") != std::string::npos) return "element type irc does not hold";
  if (diagnostic.find("must be known at import time") != std::string::npos) return "a shape/axes input computed at run time";
  if (diagnostic.find("is a constant") != std::string::npos) return "output is a constant (folded)";
  if (diagnostic.find("slices a computed") != std::string::npos || diagnostic.find("expands a computed") != std::string::npos)
    return "Slice/Expand of a computed tensor";
  if (diagnostic.find("as irc's") != std::string::npos) return "outside irc's op semantics (shape/dtype rule)";
  if (diagnostic.find("dynamic") != std::string::npos || diagnostic.find("no shape") != std::string::npos)
    return "dynamic or unknown input shape";
  return "other: " + diagnostic.substr(0, 100);
}

}  // namespace

int main(int argc, char** argv) {
  fs::path dir = "/usr/share/libonnx-testdata/data/node";
  bool verbose = false;
  size_t every = 1;  // --every N: the 1st, (N+1)th, ... test in name order (the sanitizer build's sample)
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--verbose") verbose = true;
    else if (a == "--every" && i + 1 < argc) every = std::max<size_t>(1, std::stoul(argv[++i]));
    else dir = a;
  }
  if (!fs::is_directory(dir)) {
    std::cout << fmt::format("onnx node tests: skipped: {} is not there (Debian's libonnx-testdata)\n", dir.string());
    return 77;  // ctest's skip (SKIP_RETURN_CODE), not a pass
  }
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(dir))
    if (fs::exists(e.path() / "model.onnx")) tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());
  if (every > 1) {
    std::vector<fs::path> sample;
    for (size_t i = 0; i < tests.size(); i += every) sample.push_back(tests[i]);
    std::cout << fmt::format("onnx node tests: one in every {} of the {} tests, in name order\n", every, tests.size());
    tests = std::move(sample);
  }
  int run = 0, matched = 0, verified = 0, skipped = 0, foldedRun = 0, foldedMatched = 0;
  std::map<std::string, std::vector<std::string>> skips;
  std::vector<std::string> failures;
  for (const fs::path& t : tests) {
    std::string name = t.filename().string();
    DiagnosticEngine diags((t / "model.onnx").string(), "");
    OnnxOptions options{name, {}, true, true};
    auto loaded = loadOnnxModel(readFile(t / "model.onnx"), diags, options);
    std::set<size_t> boundInputs;  // graph inputs (by position) bound as constants from the test data
    // ONNX's tests pass shapes, axes, slice bounds, scales and depths as graph inputs; irc needs
    // them known at import: bind the integer inputs and each input an error names to the test's
    // values and load again (a node may name one after another).
    for (int round = 0; round < 4 && !loaded && !diags.diagnostics().empty() &&
                        diags.diagnostics().front().message.find("must be known at import time") != std::string::npos;
         ++round) {
      const std::string message = diags.diagnostics().front().message;
      BoundInputs bound = bindTestInputs(t, options, [&](const onnx::ValueInfoProto& in) {
        return in.type().tensor_type().elem_type() == onnx::TensorProto::INT64 ||
               message.find(fmt::format("('{}',", in.name())) != std::string::npos;
      });
      boundInputs.insert(bound.positions.begin(), bound.positions.end());
      DiagnosticEngine again((t / "model.onnx").string(), "");
      loaded = loadOnnxModel(readFile(t / "model.onnx"), again, options);
      if (!loaded) diags = std::move(again);
    }
    if (!loaded) {
      std::string reason = skipReason(diags.diagnostics().empty() ? "" : diags.diagnostics().front().message);
      if (reason == "op type not mapped" || reason == "output is a constant (folded)" ||
          reason == "computed input of a constant-only op") {
        if (auto folded = checkFolded(t, name)) {
          ++foldedRun;
          if (folded->empty()) ++foldedMatched;
          else failures.push_back(fmt::format("{}: folded at import: {}", name, *folded));
          if (verbose) std::cout << fmt::format("  {} folded at import: {}\n", name, folded->empty() ? "matched" : *folded);
          continue;
        }
      }
      ++skipped;
      skips[skipReason(diags.diagnostics().empty() ? "" : diags.diagnostics().front().message)].push_back(name);
      continue;
    }
    const Graph& g = loaded->graph;
    std::map<ValueId, TensorValue> given = loaded->parameterData;
    std::string problem;
    bool ok = true;
    for (size_t i = 0, position = 0; ok && i < g.inputs.size(); ++position) {
      if (boundInputs.count(position)) continue;  // folded at import
      auto v = readTensorFile(t / "test_data_set_0" / fmt::format("input_{}.pb", position), problem);
      if (!v) ok = false;
      else given[g.inputs[i++]] = *v;
    }
    if (!ok) {
      ++skipped;
      skips["test inputs irc cannot read"].push_back(name);
      continue;
    }
    // irc's reference computes in float64 and does not round to 16-bit floats.
    bool halfOutput = std::any_of(g.outputs.begin(), g.outputs.end(), [&](ValueId v) {
      return g.value(v).type.dtype == DType::Float16 || g.value(v).type.dtype == DType::BFloat16;
    });
    if (halfOutput) {
      ++skipped;
      skips["float16/bfloat16 outputs (the reference computes in float64, unrounded)"].push_back(name);
      continue;
    }
    auto outs = runReference(g, given, problem);
    if (!outs) {
      // Inputs outside irc's op semantics (a negative index at run time): not a wrong answer.
      ++skipped;
      skips["inputs irc's ops refuse: " + problem.substr(problem.find(": ") + 2, 40)].push_back(name);
      continue;
    }
    ++run;
    for (size_t i = 0; outs && problem.empty() && i < outs->size(); ++i) {
      auto expected = readTensorFile(t / "test_data_set_0" / fmt::format("output_{}.pb", i), problem);
      if (!expected) break;  // an expected output irc cannot read is a failure: the frontend read that model
      problem = compareOutput((*outs)[i], *expected, i);
    }
    if (!problem.empty()) {
      failures.push_back(fmt::format("{}: reference: {}", name, problem));
      continue;
    }
    ++matched;
    bool allVerified = true;
    for (int64_t devices : {4, 8}) {
      std::string shown;
      std::string why = verifyUnderRandomStrategy(g, devices, std::hash<std::string>{}(name) + devices, shown);
      if (!why.empty()) {
        failures.push_back(fmt::format("{}: verify on {} devices: {}", name, devices, why));
        allVerified = false;
      } else if (verbose) {
        std::cout << fmt::format("  {} on {} devices: strategy {} verified\n", name, devices, shown);
      }
    }
    if (allVerified) ++verified;
  }
  std::cout << fmt::format(
      "onnx node tests ({}): {} tests; {} run, {} matched the expected outputs, {} verified on 4 and 8 "
      "devices; {} skipped\n",
      dir.string(), tests.size(), run, matched, verified, skipped);
  std::cout << fmt::format("  folded at import (every input bound as a constant): {} run, {} matched\n", foldedRun,
                           foldedMatched);
  for (const auto& [why, names] : skips) {
    std::cout << fmt::format("  skipped {:4} ({})", names.size(), why);
    if (verbose) std::cout << ": " << fmt::format("{}", fmt::join(names, " "));
    std::cout << "\n";
  }
  // A floor, so that refusing everything cannot pass: 564 of Debian 12's 932 ran and matched when
  // it was set (a refusal is a skip, and skips alone are no result).
  // A sample keeps the floor's share of what it runs.
  const int kMatchedFloor = static_cast<int>(500 / every);
  if (matched < kMatchedFloor)
    failures.push_back(fmt::format("only {} tests ran and matched; at least {} did (a mapping regressed into refusals?)", matched,
                                   kMatchedFloor));
  for (const auto& f : failures) std::cout << "  FAILED " << f << "\n";
  return failures.empty() ? 0 : 1;
}
