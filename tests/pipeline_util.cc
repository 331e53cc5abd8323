#include "tests/pipeline_util.h"

#include <fmt/format.h>

#include "frontends/yaml/yaml_frontend.h"
#include "ir/layout_notation.h"
#include "ops/inserted_ops.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"

namespace irc::test {

namespace {
// Injects `tamper` after the last global pass.
class Tamper : public PassInstrumentation {
 public:
  explicit Tamper(std::function<void(Graph&)> fn) : fn_(std::move(fn)) {}
  void afterPass(const PassStage& stage, const Graph& graph) override {
    if (stage.position == 3 && fn_) fn_(const_cast<Graph&>(graph));
  }

 private:
  std::function<void(Graph&)> fn_;
};
}  // namespace

// Loads `yaml`, lets `prepare` adjust the options and hooks, and compiles it. The diagnostics
// of a rejected model or pass land in `errors` (then nullopt for a rejected model).
std::optional<Graph> runPipeline(const std::string& yaml,
                                 const std::function<void(Graph&, CompileOptions&, CompileHooks&)>& prepare, std::string& errors,
                                 const std::string& modelDir = "") {
  DiagnosticEngine diags("m.yaml", yaml);
  auto g = loadModel(yaml, diags, {"m", modelDir});
  if (!g) {
    errors = diags.renderToString();
    return std::nullopt;
  }
  CompileOptions options = optionsFromModel(g->parallel);
  CompileHooks hooks;
  prepare(g->graph, options, hooks);
  PassContext context{diags};
  if (compileWithSearch(g->graph, options, context, hooks) == RunOutcome::Rejected) errors = diags.renderToString();
  return std::move(g->graph);
}

Compiled compileAllRanks(const std::string& yaml, std::optional<SearchMode> mode, const std::function<void(Graph&)>& tamper,
                         std::optional<RedistributionMode> planner, const std::string& modelDir) {
  Compiled c;
  Tamper t(tamper);
  auto g = runPipeline(
      yaml,
      [&](Graph& graph, CompileOptions& options, CompileHooks& hooks) {
        if (mode) options.searchMode = *mode;
        if (planner) options.redistribution = *planner;
        options.ranks = options.everyRank();
        c.original = graph;
        c.options = options;
        hooks.rankGraphs = [&](int64_t rank, Graph&& local) { c.locals.emplace(rank, std::move(local)); };
        hooks.instrumentations.push_back(&t);
      },
      c.errors, modelDir);
  if (g) c.global = std::move(*g);
  return c;
}

OpFacts opFacts(const std::string& yaml, const std::string& opName) {
  OpFacts f;
  auto g = runPipeline(
      yaml,
      [](Graph&, CompileOptions& options, CompileHooks&) {
        options.searchMode = SearchMode::SemiAuto;
        options.stopAfter = "layout_inference";
      },
      f.errors);
  if (!g || !f.errors.empty()) return f;
  const Op& op = g->op(g->value(*g->findValue(opName)).producer);
  const OpParallelState& p = *op.parallel;
  f.devMatrix = formatShape(p.sharding.mesh.dims);
  for (const auto& l : p.inputLayouts) {
    f.inputMaps.push_back(printTensorMapIndex(l));
    f.inputSlices.push_back(l.sliceShape());
  }
  for (const auto& l : p.outputLayouts) {
    f.outputMaps.push_back(printTensorMapIndex(l));
    f.outputSlices.push_back(l.sliceShape());
    f.outputPartial.push_back(l.partialFromRight());
  }
  for (const ForwardOp& fo : p.forwardOps) {
    std::string_view kind = opTypeOfStep(fo.step);
    if (fo.step.kind == RedistStep::Kind::RealDiv) f.forward.push_back(fmt::format("RealDiv {}", fo.step.divisor));
    else
      f.forward.push_back(fmt::format("{} {} over {}", kind, reduceOpName(fo.step.reduceOp),
                                      groupRanksText(groupAlongAxes(p.sharding.mesh, 0, fo.step.axes))));
  }
  return f;
}

VerifyResult verifyCompiled(const Compiled& c, uint64_t seed) {
  VerifyOptions options;
  options.seed = seed;
  return simulateAndCompare(c.original, c.global, c.locals, options);
}

std::string twoStageProducts(const std::string& parallel) {
  return "parallel: " + parallel + "\n" + R"(cluster: {preset: dgx-h100}
inputs: [{name: x, shape: [4096, 1024], dtype: float32}]
parameters:
  - {name: w0, shape: [1024, 1024], dtype: float32}
  - {name: w1, shape: [1024, 1024], dtype: float32}
ops:
  - {name: mm0, type: MatMul, inputs: [x, w0]}
  - {name: mm1, type: MatMul, inputs: [mm0, w1]}
outputs: [mm1]
stages: {mm0: 0, mm1: 1}
)";
}

}  // namespace irc::test
