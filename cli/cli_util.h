#pragma once
// Small helpers shared by the subcommands: flag scanning with "did you mean", colour choice,
// reading the model text.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "frontends/load/load_model.h"
#include "ir/graph.h"
#include "ir/tensor_value.h"
#include "passes/manager/compile_options.h"

namespace irc::cli {

// A usage error: exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Walks argv, splitting `--flag=value`; knows which flags take a value.
class ArgScanner {
 public:
  ArgScanner(std::vector<std::string> args, std::vector<std::string> flagsWithValue, std::vector<std::string> switches);

  bool done() const { return pos_ >= args_.size(); }
  // The next flag (with its value when it takes one) or positional argument.
  struct Item {
    std::string flag;  // empty for a positional argument
    std::string value;
  };
  Item next();

 private:
  std::vector<std::string> args_;
  std::vector<std::string> withValue_, switches_;
  size_t pos_ = 0;
};

enum class ColorMode { Auto, Always, Never };
ColorMode parseColorMode(const std::string& value);
bool useColor(ColorMode mode, FILE* stream);

int64_t parseIntArg(const std::string& flag, const std::string& value);
int64_t parsePositiveIntArg(const std::string& flag, const std::string& value);  // >= 1
double parseSecondsArg(const std::string& flag, const std::string& value);       // a non-negative number
double parseCostModelArg(const std::string& flag, const std::string& value);     // --alpha/--beta/--gamma within costModelBounds
SearchMode parseSearchModeArg(const std::string& flag, const std::string& value);
RedistributionMode parseRedistributionArg(const std::string& flag, const std::string& value);

// A loaded model with the diagnostic engine that holds its text (passes report into it), and
// the options to compile it with: its `parallel` block with the command line's overrides.
struct LoadedModel {
  std::unique_ptr<DiagnosticEngine> diags;
  Graph graph;
  CompileOptions options;
  // An ONNX file's parameter values (initializers and folded constants), when asked for with
  // ParallelOverrides::keepParameterData.
  std::map<ValueId, TensorValue> parameterData;
  ModelFacts facts;  // what the frontend knows beyond the graph (the report and --torch-out say it)
};

// search_mode auto on a cluster: the structural search (search/configuration_search.h) on
// `options` (the command's final ones) and the loaded graph; false, with its diagnostics
// rendered, when nothing fits. Every subcommand that compiles runs it so that they all see the
// plan `irc MODEL` compiles.
// On a terminal (not `quiet`) a search past a second shows its progress on stderr.
bool searchConfigurationOrReport(LoadedModel& loaded, CompileOptions& options, ColorMode color, bool quiet = false);

// Command-line overrides of the model's `parallel` settings.
struct ParallelOverrides {
  std::optional<SearchMode> searchMode;
  std::optional<RedistributionMode> redistribution;
  std::string strategyCkptIn;           // --strategy-ckpt-in: wins over parallel.strategy_ckpt_load
  std::map<std::string, int64_t> dims;  // --dim NAME=VALUE: an ONNX graph's symbolic dims
  std::optional<int64_t> deviceNum;     // --device-num: an ONNX graph without a plan
  bool onnxShapeCheck = false;          // --onnx-shape-check
  bool opaqueUnsupported = false;       // --opaque-unsupported
  bool keepParameterData = false;       // verify --inputs: an ONNX file's own weights, not seeded ones
};

// --dim and --device-num, shared by the subcommands that load a model; false for other flags.
bool takeGraphFlag(const std::string& flag, const std::string& value, ParallelOverrides& overrides);
// `--dim NAME=VALUE` into `dims`.
void parseDimArg(const std::string& value, std::map<std::string, int64_t>& dims);

// Reads and loads a model ("-" = stdin) and applies the overrides to its options. On failure prints the
// diagnostics (or the read error) and returns nullopt; the command then exits 1.
std::optional<LoadedModel> loadModelOrReport(const std::string& path, ColorMode color, const ParallelOverrides& overrides = {});
std::vector<int64_t> parseIntListArg(const std::string& flag, const std::string& value);

// Lets go of `what` just before the process exits. A compile's graphs are millions of small
// allocations that the OS reclaims at once at exit, where freeing them one by one takes a tenth
// of the run (clang's -disable-free does the same). Sanitizer builds free them, so that leak
// checking keeps meaning something.
template <typename T>
void releaseAtExit(T&& what) {
#if defined(__SANITIZE_ADDRESS__) || defined(IRC_SANITIZED)
  T freed = std::move(what);
#else
  new T(std::move(what));  // intentionally never deleted: the process ends next
#endif
}

}  // namespace irc::cli
