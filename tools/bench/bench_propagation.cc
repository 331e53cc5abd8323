// Propagation benchmark (issue 6): both search modes on generated transformers of 100, 1000 and
// 4000 layers; prints the time of each stage and the time per op, so linear growth shows as a
// flat per-op column. Usage: irc_bench [LAYERS...]  (default 100 1000 4000)
//
// `irc_bench --comm [LAYERS]` instead prints, as a Markdown table, the communication bytes per
// rank of the generated transformer (default 4 layers) at dp x mp in {8x1, 4x2, 2x4, 1x8}, under
// both propagation modes and both redistribution planners.
//
// `irc_bench --model LAYERS [verify]` prints the generated model as YAML (8 devices; `verify`:
// irc verify's benchmark sizes), and `irc_bench --floor FILE` only reads FILE with yaml-cpp's
// LoadFile: the floor tools/bench/bench_table measures irc against.
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "dumps/report.h"
#include "frontends/yaml/yaml_frontend.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"
#include "tools/bench/transformer_model.h"

namespace {

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Times each global pass.
class StageTimer : public irc::PassInstrumentation {
 public:
  void beforePass(const irc::PassStage&) override { start_ = std::chrono::steady_clock::now(); }
  void afterPass(const irc::PassStage& stage, const irc::Graph&) override {
    if (!stage.isLoaded()) ms[stage.position] = msSince(start_);
  }
  double ms[5] = {0, 0, 0, 0, 0};

 private:
  std::chrono::steady_clock::time_point start_;
};

// Bytes of communication per rank of one compile (global passes only), or -1 when rejected.
double commBytes(const std::string& text, irc::SearchMode mode, irc::RedistributionMode planner) {
  irc::DiagnosticEngine diags("bench.yaml", text);
  auto graph = irc::loadModel(text, diags, {"bench"});
  if (!graph) return -1;
  irc::CompileOptions options = irc::optionsFromModel(graph->parallel);
  options.searchMode = mode;
  options.redistribution = planner;
  options.stopAfter = "redistribution";
  irc::PassContext context{diags};
  if (irc::compileWithSearch(graph->graph, options, context) != irc::RunOutcome::Ok) return -1;
  return irc::compileTotals(graph->graph).commBytesPerRank;
}

int commTable(int layers) {
  using irc::RedistributionMode;
  std::cout << fmt::format("Communication bytes per rank, generated transformer of {} layers ({} ops), 8 devices:\n\n", layers,
                           layers * irc::bench::kOpsPerLayer);
  std::cout << "| dp x mp | search mode | mindspore planner | optimal planner | saved |\n|---|---|---|---|---|\n";
  for (auto [dp, mp] : std::vector<std::pair<int, int>>{{8, 1}, {4, 2}, {2, 4}, {1, 8}}) {
    std::string text = irc::bench::transformerModel(layers, dp, mp);
    for (irc::SearchMode mode : {irc::SearchMode::ShardingPropagation, irc::SearchMode::FactorPropagation}) {
      double ms = commBytes(text, mode, RedistributionMode::MindSpore), opt = commBytes(text, mode, RedistributionMode::Optimal);
      if (ms < 0 || opt < 0) return 1;
      std::cout << fmt::format("| {} x {} | {} | {:.0f} | {:.0f} | {:.1f}% |\n", dp, mp, irc::searchModeName(mode), ms, opt,
                               ms > 0 ? 100.0 * (ms - opt) / ms : 0.0);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // The generated model as YAML, for timing `irc` itself on it.
  // `--model LAYERS [verify]`: the benchmark's sizes, or with `verify` irc verify's benchmark sizes.
  // `--gpt LAYERS [configured]`: search_mode auto's GPT (a vocabulary, no strategies unless
  // `configured`: the Megatron plan, 2-way data x 4-way tensor parallel).
  if (argc > 2 && std::string(argv[1]) == "--gpt") {
    bool configured = argc > 3 && std::string(argv[3]) == "configured";
    std::cout << irc::bench::transformerModel(std::atoi(argv[2]), 2, 4, irc::bench::kSearchSize, configured);
    return 0;
  }
  if (argc > 2 && std::string(argv[1]) == "--model") {
    bool verifySize = argc > 3 && std::string(argv[3]) == "verify";
    std::cout << irc::bench::transformerModel(std::atoi(argv[2]), 2, 4,
                                              verifySize ? irc::bench::kVerifySize : irc::bench::TransformerSize{});
    return 0;
  }
  // The floor: only yaml-cpp's tree of the file, as cheaply as the library reads it.
  if (argc > 2 && std::string(argv[1]) == "--floor") return YAML::LoadFile(argv[2]).IsMap() ? 0 : 1;
  if (argc > 1 && std::string(argv[1]) == "--comm") return commTable(argc > 2 ? std::atoi(argv[2]) : 4);
  std::vector<int> layers;
  for (int i = 1; i < argc; ++i) layers.push_back(std::atoi(argv[i]));
  if (layers.empty()) layers = {100, 1000, 4000};
  std::cout << fmt::format("{:>6} {:>7} {:<21} {:>9} {:>12} {:>10} {:>12} {:>11} {:>14}\n", "layers", "ops", "mode", "parse ms",
                           "propagate ms", "layout ms", "redistrib ms", "total ms", "propagate us/op");
  for (int n : layers) {
    std::string text = irc::bench::transformerModel(n, 8);
    for (irc::SearchMode mode : {irc::SearchMode::ShardingPropagation, irc::SearchMode::FactorPropagation}) {
      auto t0 = std::chrono::steady_clock::now();
      irc::DiagnosticEngine diags("bench.yaml", text);
      auto graph = irc::loadModel(text, diags, {"bench"});
      if (!graph) {
        std::cerr << diags.renderToString();
        return 1;
      }
      double parseMs = msSince(t0);
      irc::CompileOptions options = irc::optionsFromModel(graph->parallel);
      options.searchMode = mode;
      options.stopAfter = "redistribution";
      StageTimer timer;
      irc::PassContext context{diags};
      irc::CompileHooks hooks;
      hooks.instrumentations.push_back(&timer);
      if (irc::compileWithSearch(graph->graph, options, context, hooks) != irc::RunOutcome::Ok) {
        std::cerr << diags.renderToString();
        return 1;
      }
      size_t ops = static_cast<size_t>(n) * irc::bench::kOpsPerLayer;
      std::cout << fmt::format("{:>6} {:>7} {:<21} {:>9.1f} {:>12.1f} {:>10.1f} {:>12.1f} {:>11.1f} {:>14.2f}\n", n, ops,
                               irc::searchModeName(mode), parseMs, timer.ms[1], timer.ms[2], timer.ms[3], msSince(t0),
                               1000.0 * timer.ms[1] / static_cast<double>(ops));
    }
  }
  return 0;
}
