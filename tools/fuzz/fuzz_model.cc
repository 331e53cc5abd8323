// The fuzz target: bytes -> the YAML frontend (or the ONNX frontend, for bytes that start like an
// ONNX file: compiled data parallel on 4 devices, unmapped nodes kept opaque; or `irc import`'s
// dump reader, for bytes that start like a dump) -> the whole pipeline for every rank -> `irc
// verify`'s lockstep simulation. A rejected model must come with a located diagnostic; an
// accepted one must compile without an internal error and compute, on every rank, what the
// single-device program computes. Anything else aborts, which the fuzzer reports.
//
// Built two ways: with libFuzzer (clang, `tools/fuzz/run`), and with the small replay main in
// replay_main.cc, which the sanitizer build of the test suite runs over the corpus.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <map>
#include <string>

#include "plan/parallel_config.h"
#include "dumps/ir_diff.h"
#include "dumps/model_yaml_writer.h"
#include "frontends/mindspore/mindspore_import.h"
#include "frontends/npz_reader.h"
#include "frontends/onnx/onnx_frontend.h"
#include "frontends/yaml/yaml_frontend.h"
#include "ops/verifier.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"
#include "verify/spmd_simulator.h"

namespace {

// Keeps one input fast (the fuzzer wants thousands a second): bigger meshes and graphs are the
// benchmarks' business, not the fuzzer's.
constexpr int64_t kMaxFuzzDevices = 16;
constexpr size_t kMaxFuzzOps = 64;
constexpr int64_t kMaxFuzzElements = int64_t{1} << 20;

[[noreturn]] void fail(const std::string& what, const std::string& model) {
  std::fprintf(stderr, "irc fuzz: %s\n--- model ---\n%s\n", what.c_str(), model.c_str());
  std::abort();
}

// `irc verify --inputs`'s reader: an .npy (bytes starting with numpy's magic) or an .npz (a zip,
// "PK") must be read or refused with a message, never crash.
bool fuzzArrays(const std::string& bytes) {
  std::string error;
  if (bytes.rfind("\x93NUMPY", 0) == 0) {
    if (!irc::parseNpy(bytes, error) && error.empty()) fail("an .npy refused without a message", bytes);
    return true;
  }
  if (bytes.rfind("PK", 0) != 0) return false;
  char path[] = "/tmp/irc_fuzz_npz_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return true;
  FILE* f = fdopen(fd, "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  if (!irc::readNpz(path, error) && error.empty()) fail("an .npz refused without a message", bytes);
  std::remove(path);
  return true;
}

// `irc import`'s reader: text that starts like a dump (`# IR entry`, `%para`, a node line) is read
// into the IR, refused with a located message or turned into a consistent graph, whose model text
// then goes the YAML way below. Returns false where nothing is left to run.
bool fuzzDump(std::string& text) {
  if (text.rfind("# IR", 0) != 0 && text.rfind("%para", 0) != 0 && text.rfind("  %", 0) != 0) return true;
  // irc diff's readers of dump text (any line length: a group of 16,384 ranks is one line).
  irc::diffIrText(text, text);
  irc::summarizeDump(text);
  irc::sentTransfers(&text);
  irc::DiagnosticEngine diags("fuzz.ir", text);
  irc::ImportOptions options;
  options.name = "fuzz";
  auto imported = irc::importMindSporeDump(text, options, diags);
  if (!imported) {
    if (!diags.hasErrors()) fail("a dump refused without a diagnostic", text);
    if (diags.renderToString().rfind("fuzz.ir:", 0) != 0) fail("a dump diagnostic without FILE:", text);
    return false;
  }
  if (auto problems = irc::verifyGraph(imported->graph); !problems.empty())
    fail("an imported graph is invalid: " + problems[0], text);
  text = irc::writeModelYaml(imported->graph, imported->parallel);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace irc;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (fuzzArrays(text)) return 0;
  if (!fuzzDump(text)) return 0;
  const bool onnx = looksLikeOnnx(text);
  const char* file = onnx ? "fuzz.onnx" : "fuzz.yaml";
  DiagnosticEngine diags(file, onnx ? "" : text);
  try {
    std::optional<Graph> graph;
    ParallelSettings settings;
    if (onnx) {
      OnnxOptions options;
      options.defaultName = "fuzz";
      options.opaqueUnsupported = true;
      options.checkShapesWithOnnx = true;
      if (auto loaded = loadOnnxModel(text, diags, options)) {
        graph = std::move(loaded->graph);
        settings = onnxDefaultSettings(4);
      }
    } else {
      FrontendOptions options;
      options.defaultName = "fuzz";
      if (auto loaded = loadModel(text, diags, options)) {
        graph = std::move(loaded->graph);
        settings = loaded->parallel;
      }
    }
    if (!graph) {
      if (!diags.hasErrors()) fail("rejected without a diagnostic", text);
      if (diags.renderToString().rfind(file, 0) != 0) fail("a diagnostic without FILE:", text);
      return 0;
    }
    if (settings.deviceNum > kMaxFuzzDevices || graph->ops.size() > kMaxFuzzOps) return 0;
    VerifyOptions options;
    options.maxElements = kMaxFuzzElements;  // larger programs are refused by verify, as documented
    Graph original = *graph;
    std::map<int64_t, Graph> locals;
    PassContext context{diags};
    CompileOptions compileOptions;
    static_cast<ParallelSettings&>(compileOptions) = settings;
    compileOptions.ranks = compileOptions.everyRank();
    CompileHooks hooks;
    hooks.rankGraphs = [&](int64_t rank, Graph&& local) { locals.emplace(rank, std::move(local)); };
    if (compileWithSearch(*graph, compileOptions, context, hooks) == RunOutcome::Rejected) {
      if (!diags.hasErrors()) fail("a pass rejected without a diagnostic", text);
      return 0;
    }
    VerifyResult result = simulateAndCompare(original, *graph, locals, options);
    if (!result.problem.empty()) return 0;  // e.g. an index outside a table: the model's problem
    if (!result.ok)
      fail("verify mismatch at op '" + result.op + "' on rank " + std::to_string(result.rank) + ": got " +
               std::to_string(result.got) + ", expected " + std::to_string(result.expected),
           text);
  } catch (const std::exception& e) {
    fail(std::string("exception: ") + e.what(), text);
  }
  return 0;
}
