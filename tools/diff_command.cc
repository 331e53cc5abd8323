// `irc diff A B [--rank R]`: a sharding-aware diff of two dumps (.ir), two dump directories
// (paired by pass) or two models (compiled in memory, every stage compared). Exit status as
// diff(1): 0 identical, 1 different (or a model was rejected), 2 usage.
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "dumps/ir_diff.h"
#include "dumps/ir_printer.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"
#include "tools/cli_util.h"
#include "tools/command_specs.h"
#include "tools/commands.h"

namespace irc::cli {
namespace {
namespace fs = std::filesystem;

// Every stage's dump text, by "XXXX_<pass>" (the pipeline position first, so that stages sort in
// pipeline order); printed as the pass name.
using Stages = std::map<std::string, std::string>;

std::string stageKey(int position, std::string_view pass) { return fmt::format("{:04d}_{}", position, pass); }
std::string stageName(const std::string& key) { return key.substr(5); }

class TextCapture : public PassInstrumentation {
 public:
  explicit TextCapture(int64_t rank) : rank_(rank) {}
  void afterPass(int position, std::string_view, std::string_view dumpName, const Graph& graph) override {
    PrintOptions options;
    options.rank = rank_;
    stages[stageKey(position, dumpName)] = printGraph(graph, options);
  }
  void afterRankPass(int position, std::string_view passName, std::string_view dumpName, const Graph& graph, int64_t) override {
    afterPass(position, passName, dumpName, graph);
  }
  Stages stages;

 private:
  int64_t rank_;
};

std::optional<Stages> stagesOfModel(const std::string& path, int64_t rank, ColorMode color) {
  auto loaded = loadModelOrReport(path, color);
  if (!loaded) return std::nullopt;
  if (rank >= loaded->graph.parallel.deviceNum)
    throw UsageError(fmt::format("--rank {} is not a rank of '{}' ({} devices)", rank, path, loaded->graph.parallel.deviceNum));
  PassManager manager;
  schedulePipeline(manager, loaded->graph.parallel);
  manager.setRanks({rank});
  TextCapture capture(rank);
  manager.addInstrumentation(&capture);
  PassContext context{*loaded->diags};
  if (manager.run(loaded->graph, context) == RunOutcome::Rejected) {
    loaded->diags->render(std::cerr, useColor(color, stderr));
    return std::nullopt;
  }
  return capture.stages;
}

// The dumps of a directory (its rank_<r>/ folder when there is one): `<pass>_XXXX.ir` files.
Stages stagesOfDir(const std::string& dir, int64_t rank) {
  fs::path root = fs::exists(fs::path(dir) / fmt::format("rank_{}", rank)) ? fs::path(dir) / fmt::format("rank_{}", rank) : fs::path(dir);
  Stages stages;
  for (const auto& e : fs::directory_iterator(root)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() != ".ir" || name.size() < 9 || name[name.size() - 8] != '_') continue;
    std::string digits = name.substr(name.size() - 7, 4);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string error;
    std::string text = readModelText(e.path().string(), error).value_or("");
    stages[stageKey(std::stoi(digits), name.substr(0, name.size() - 8))] = text;
  }
  return stages;
}

bool isModel(const std::string& p) {
  std::string ext = fs::path(p).extension().string();
  return ext == ".yaml" || ext == ".yml" || p == "-";
}

}  // namespace

int runDiff(const std::vector<std::string>& args) {
  const CommandSpec& spec = commandSpec("diff");
  ArgScanner scan(args, flagsWithValue(spec), switchFlags(spec));
  std::vector<std::string> paths;
  int64_t rank = 0;
  ColorMode color = ColorMode::Auto;
  while (!scan.done()) {
    auto item = scan.next();
    if (item.flag.empty()) paths.push_back(item.value);
    else if (item.flag == "--rank") rank = parseIntArg(item.flag, item.value);
    else if (item.flag == "--color") color = parseColorMode(item.value);
  }
  if (paths.size() != 2) throw UsageError("usage: irc diff A B [--rank R]   (two .ir dumps, two dump dirs or two models)");
  for (const auto& p : paths)
    if (p != "-" && !fs::exists(p)) throw UsageError(fmt::format("'{}' does not exist", p));

  Stages a, b;
  if (isModel(paths[0]) && isModel(paths[1])) {
    auto sa = stagesOfModel(paths[0], rank, color), sb = stagesOfModel(paths[1], rank, color);
    if (!sa || !sb) return 1;
    a = *sa;
    b = *sb;
  } else if (fs::is_directory(paths[0]) && fs::is_directory(paths[1])) {
    a = stagesOfDir(paths[0], rank);
    b = stagesOfDir(paths[1], rank);
  } else if (fs::is_regular_file(paths[0]) && fs::is_regular_file(paths[1]) && !isModel(paths[0]) && !isModel(paths[1])) {
    std::string err;
    a["dump"] = readModelText(paths[0], err).value_or("");
    b["dump"] = readModelText(paths[1], err).value_or("");
  } else {
    throw UsageError("irc diff compares two of a kind: two .ir dumps, two dump directories or two models");
  }

  size_t differences = 0;
  std::cout << fmt::format("--- {}\n+++ {}\n", paths[0], paths[1]);
  for (const auto& [stage, text] : a) {
    auto it = b.find(stage);
    if (it == b.end()) {
      std::cout << fmt::format("== {}: only in {}\n", stageName(stage), paths[0]);
      ++differences;
      continue;
    }
    IrDiff d = diffIrText(text, it->second);
    if (d.empty()) continue;
    std::cout << fmt::format("== {}\n", stageName(stage));
    for (const auto& line : d.lines) std::cout << line << "\n";
    differences += d.lines.size();
  }
  for (const auto& [stage, text] : b)
    if (!a.count(stage)) {
      std::cout << fmt::format("== {}: only in {}\n", stageName(stage), paths[1]);
      ++differences;
    }
  std::cout << (differences == 0 ? "no differences\n" : fmt::format("{} difference{}\n", differences, differences == 1 ? "" : "s"));
  return differences == 0 ? 0 : 1;
}

}  // namespace irc::cli
