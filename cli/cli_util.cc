#include "cli/cli_util.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "frontends/load/load_model.h"
#include "frontends/onnx/onnx_frontend.h"
#include "frontends/mindspore/strategy_checkpoint.h"
#include "ir/suggest.h"
#include "passes/pipeline/compile.h"
#include "ops/batch_split.h"
#include "search/configuration_search.h"

namespace irc::cli {

ArgScanner::ArgScanner(std::vector<std::string> args, std::vector<std::string> flagsWithValue, std::vector<std::string> switches)
    : args_(std::move(args)), withValue_(std::move(flagsWithValue)), switches_(std::move(switches)) {}

ArgScanner::Item ArgScanner::next() {
  std::string arg = args_[pos_++];
  if (arg.size() < 2 || arg[0] != '-' || arg == "-") return {"", arg};
  std::string flag = arg, value;
  bool inlineValue = false;
  if (auto eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
    flag = arg.substr(0, eq);
    value = arg.substr(eq + 1);
    inlineValue = true;
  }
  bool takesValue = std::find(withValue_.begin(), withValue_.end(), flag) != withValue_.end();
  bool isSwitch = std::find(switches_.begin(), switches_.end(), flag) != switches_.end();
  if (!takesValue && !isSwitch) {
    std::vector<std::string> all = withValue_;
    all.insert(all.end(), switches_.begin(), switches_.end());
    auto match = closestMatch(flag, all);
    throw UsageError(match ? fmt::format("unknown option '{}'; did you mean '{}'?", flag, *match)
                           : fmt::format("unknown option '{}'; see 'irc --help'", flag));
  }
  if (isSwitch) {
    if (inlineValue) throw UsageError(fmt::format("option '{}' takes no value", flag));
    return {flag, ""};
  }
  if (!inlineValue) {
    if (pos_ >= args_.size()) throw UsageError(fmt::format("option '{}' needs a value", flag));
    value = args_[pos_++];
  }
  return {flag, value};
}

ColorMode parseColorMode(const std::string& value) {
  if (value == "auto") return ColorMode::Auto;
  if (value == "always") return ColorMode::Always;
  if (value == "never") return ColorMode::Never;
  throw UsageError(fmt::format("--color takes auto, always or never; got '{}'", value));
}

bool useColor(ColorMode mode, FILE* stream) {
  if (mode == ColorMode::Always) return true;
  if (mode == ColorMode::Never) return false;
  const char* noColor = std::getenv("NO_COLOR");
  if (noColor && *noColor) return false;
  return isatty(fileno(stream)) != 0;
}

int64_t parseIntArg(const std::string& flag, const std::string& value) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size() || value.empty())
    throw UsageError(fmt::format("{} takes an integer; got '{}'", flag, value));
  return v;
}

int64_t parsePositiveIntArg(const std::string& flag, const std::string& value) {
  int64_t v = parseIntArg(flag, value);
  if (v < 1) throw UsageError(fmt::format("{} takes a positive integer; got '{}'", flag, value));
  return v;
}

double parseSecondsArg(const std::string& flag, const std::string& value) {
  try {
    size_t used = 0;
    double v = std::stod(value, &used);
    if (used == value.size() && v >= 0) return v;
  } catch (const std::exception&) {}
  throw UsageError(fmt::format("{} takes a non-negative number; got '{}'", flag, value));
}

double parseCostModelArg(const std::string& flag, const std::string& value) {
  double v = parseSecondsArg(flag, value);
  auto [low, high] = costModelBounds(flag.substr(2));
  if (!(v >= low && v <= high))
    throw UsageError(fmt::format("{} {} is outside what a machine does; valid: {:g} .. {:g} (as parallel.cost_model.{})", flag,
                                 value, low, high, flag.substr(2)));
  return v;
}

SearchMode parseSearchModeArg(const std::string& flag, const std::string& value) {
  if (auto m = parseSearchMode(value)) return *m;
  throw UsageError(fmt::format("{} '{}' is not known{}; valid: {}", flag, value, didYouMean(value, searchModeNames()),
                               joinNames(searchModeNames())));
}

RedistributionMode parseRedistributionArg(const std::string& flag, const std::string& value) {
  if (auto m = parseRedistributionMode(value)) return *m;
  throw UsageError(fmt::format("{} takes {}; got '{}'", flag, joinNames(redistributionModeNames()), value));
}

void parseDimArg(const std::string& value, std::map<std::string, int64_t>& dims) {
  size_t eq = value.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("--dim takes NAME=VALUE (a symbolic dim of the ONNX graph and its size); got '{}'", value));
  dims[value.substr(0, eq)] = parsePositiveIntArg("--dim " + value.substr(0, eq), value.substr(eq + 1));
}

bool takeGraphFlag(const std::string& flag, const std::string& value, ParallelOverrides& overrides) {
  if (flag == "--dim") parseDimArg(value, overrides.dims);
  else if (flag == "--device-num") overrides.deviceNum = parsePositiveIntArg(flag, value);
  else if (flag == "--onnx-shape-check") overrides.onnxShapeCheck = true;
  else if (flag == "--opaque-unsupported") overrides.opaqueUnsupported = true;
  else return false;
  return true;
}

std::optional<LoadedModel> loadModelOrReport(const std::string& path, ColorMode color, const ParallelOverrides& overrides) {
  std::string readError;
  auto text = readModelText(path, readError);
  if (!text) {
    std::cerr << "irc: error: " << readError << "\n";
    return std::nullopt;
  }
  // An ONNX graph or a config.json's decoder: a torch model's graph without settings of its own.
  bool onnx = isOnnxFile(path, *text) || isConfigFile(path);
  if (overrides.deviceNum && !onnx)
    throw UsageError("--device-num applies to an ONNX graph or a config.json; a YAML model or plan sets parallel.device_num");
  LoadOptions load{overrides.dims,      overrides.onnxShapeCheck, overrides.opaqueUnsupported, overrides.keepParameterData,
                   overrides.deviceNum, overrides.strategyCkptIn};
  ModelFile file = loadModelFile(path, *text, load);
  if (!file.error.empty()) {
    std::cerr << "irc: error: " << file.error << "\n";
    return std::nullopt;
  }
  if (!file.loaded) {
    file.diags->render(std::cerr, useColor(color, stderr));
    return std::nullopt;
  }
  if (!file.diags->diagnostics().empty()) file.diags->render(std::cerr, useColor(color, stderr));  // warnings
  CompileOptions options = optionsFromModel(file.loaded->parallel);
  if (overrides.searchMode) options.searchMode = *overrides.searchMode;
  if (overrides.redistribution) options.redistribution = *overrides.redistribution;
  return LoadedModel{std::move(file.diags), std::move(file.loaded->graph), std::move(options),
                     std::move(file.loaded->parameterData), file.loaded->facts};
}

namespace {

// A search that runs past a second shows on a terminal what it has done: its trial compiles
// (layer models, then whole plans) and its time against search_time_limit, on one line redrawn
// in place and cleared at the end. Silent when stderr is not a terminal or with -q.
class SearchProgress {
 public:
  SearchProgress(bool enabled, double limit) : enabled_(enabled), limit_(limit), start_(Clock::now()) {}
  ~SearchProgress() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
  }
  TrialCompile wrap(TrialCompile compile) {
    return [this, compile = std::move(compile)](Graph& graph, const CompileOptions& options, PassContext& context) {
      RunOutcome outcome = compile(graph, options, context);
      ++compiles_;
      const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
      if (enabled_ && elapsed >= 1 && elapsed - drawn_ >= 0.1) {
        drawn_ = elapsed;
        std::cerr << fmt::format("\r\033[Kirc: search: {} trial compile{}, {:.0f} s of its {:.0f} s limit", compiles_,
                                 compiles_ == 1 ? "" : "s", elapsed, limit_)
                  << std::flush;
        shown_ = true;
      }
      return outcome;
    };
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_, shown_ = false;
  double limit_, drawn_ = 0;  // the limit, and when the line was last drawn (seconds in)
  Clock::time_point start_;
  int64_t compiles_ = 0;
};

}  // namespace

bool searchConfigurationOrReport(LoadedModel& loaded, CompileOptions& options, ColorMode color, bool quiet) {
  SearchProgress progress(!quiet && isatty(fileno(stderr)) != 0, options.searchTimeLimit);
  ConfigurationSearchOutcome outcome =
      runConfigurationSearch(loaded.graph, options, *loaded.diags, progress.wrap(compileForTrials()));
  if (outcome != ConfigurationSearchOutcome::Failed) return true;
  loaded.diags->render(std::cerr, useColor(color, stderr));
  return false;
}

std::vector<int64_t> parseIntListArg(const std::string& flag, const std::string& value) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    std::string part = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    out.push_back(parseIntArg(flag, part));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace irc::cli
