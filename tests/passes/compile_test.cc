// compileWithSearch(): the one entry point, its options, and what the pass manager does with them.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontends/yaml/yaml_frontend.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"

namespace irc::test {

namespace {

const char* kModel =
    "parallel: {device_num: 4, search_mode: sharding_propagation, redistribution: mindspore}\n"
    "inputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n"
    "parameters:\n  - {name: w, shape: [16, 8], dtype: float32}\n"
    "ops:\n  - {name: mm, type: MatMul, inputs: [x, w], in_strategy: [[1, 4], [4, 1]]}\n"
    "  - {name: r, type: ReLU, inputs: [mm], in_strategy: [[4, 1]]}\n"
    "outputs: [r]\n";

struct Loaded {
  DiagnosticEngine diags{"m.yaml", kModel};
  LoadedGraph model = *loadModel(kModel, diags, {"m"});
  Graph& graph = model.graph;
};

size_t countType(const Graph& g, const std::string& type) {
  size_t n = 0;
  for (OpId id : g.order) n += g.op(id).type == type ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE(
    "compileWithSearch() reads the options, not the graph: overrides change the plan and leave the model's parallel block") {
  Loaded mindspore, optimal;
  PassContext c1{mindspore.diags}, c2{optimal.diags};
  CompileOptions options = optionsFromModel(mindspore.model.parallel);
  REQUIRE(compileWithSearch(mindspore.graph, options, c1) == RunOutcome::Ok);
  options.redistribution = RedistributionMode::Optimal;
  REQUIRE(compileWithSearch(optimal.graph, options, c2) == RunOutcome::Ok);
  // The partial MatMul feeding a consumer that wants dim 0 split: AllReduce + slice for
  // MindSpore's planner, one ReduceScatter for the optimal one.
  CHECK(countType(mindspore.graph, "AllReduce") == 1);
  CHECK(countType(optimal.graph, "ReduceScatter") == 1);
  CHECK(countType(optimal.graph, "AllReduce") == 0);
  CHECK(optimal.model.parallel.redistribution == RedistributionMode::MindSpore);
}

TEST_CASE("compileWithSearch() stops after the stage options.stopAfter names, and materializes options.ranks") {
  Loaded l;
  PassContext context{l.diags};
  CompileOptions options = optionsFromModel(l.model.parallel);
  options.ranks = {1, 3};
  std::vector<int64_t> materialized;
  CompileHooks hooks;
  hooks.rankGraphs = [&](int64_t rank, Graph&& local) {
    CHECK(local.localShapes);
    materialized.push_back(rank);
  };
  REQUIRE(compileWithSearch(l.graph, options, context, hooks) == RunOutcome::Ok);
  CHECK(materialized == std::vector<int64_t>{1, 3});

  Loaded stopped;
  PassContext context2{stopped.diags};
  options.stopAfter = "layout_inference";
  materialized.clear();
  REQUIRE(compileWithSearch(stopped.graph, options, context2, hooks) == RunOutcome::Ok);
  CHECK(materialized.empty());
  CHECK(countType(stopped.graph, "AllReduce") == 0);
  CHECK(stopped.graph.op(0).parallel->layoutsInferred);
}

// A rank's slice of a value is on the heap, made on first write (ir/graph.h): shape slicing
// writes one for each input, parameter and graph output, and no other value holds one.
TEST_CASE("a rank's local graph: only inputs, parameters and outputs hold their slice of the global tensor") {
  Loaded l;
  PassContext context{l.diags};
  CompileOptions options = optionsFromModel(l.model.parallel);
  options.ranks = {1};
  std::vector<std::string> sliced;
  CompileHooks hooks;
  hooks.rankGraphs = [&](int64_t, Graph&& local) {
    for (const Value& v : local.values) {
      if (!v.rankSlice.written()) continue;
      std::string ranges;
      for (auto [begin, end] : v.rankSlice->ranges) ranges += fmt::format("[{}:{}]", begin, end);
      sliced.push_back(fmt::format("{} {} of {}", v.name, ranges, fmt::join(v.rankSlice->globalShape, "x")));
    }
  };
  REQUIRE(compileWithSearch(l.graph, options, context, hooks) == RunOutcome::Ok);
  // Rank 1 of 4: x split on dim 1, w on dim 0 (MatMul [[1, 4], [4, 1]]), r on dim 0 (ReLU [[4, 1]]).
  CHECK(sliced == std::vector<std::string>{"x [0:8][4:8] of 8x16", "w [4:8][0:8] of 16x8", "r [2:4][0:8] of 8x8"});
}

}  // namespace irc::test

#include "passes/layout_inference.h"
#include "passes/redistribution.h"
#include "passes/strategy_propagation.h"

namespace irc::test {

namespace {

// A pass that breaks the graph (an operand naming a value that does not exist) and reports
// `status`: the manager verifies the graph only after a pass that says it changed it.
class BreakingPass : public Pass {
 public:
  explicit BreakingPass(PassStatus status) : status_(status) {}
  std::string_view name() const override { return "breaking"; }
  std::string_view dumpName() const override { return "breaking"; }
  PassStatus run(Graph& graph, PassContext&) override {
    graph.ops[0].operands[0].value = static_cast<ValueId>(graph.values.size() + 7);
    return status_;
  }

 private:
  PassStatus status_;
};

}  // namespace

TEST_CASE(
    "the pass manager runs the verifier after a pass that changed the graph, not after one that did not or only annotated it") {
  for (PassStatus status : {PassStatus::Unchanged, PassStatus::Annotated, PassStatus::Changed}) {
    Loaded l;
    PassContext context{l.diags};
    PassManager manager;
    manager.addPass(1, std::make_unique<BreakingPass>(status));
#ifdef IRC_SANITIZED
    // The sanitizer builds also compare the structure before and after a pass that says it kept
    // it: a pass saying Unchanged or Annotated that changed it is an internal error there.
    CHECK_THROWS_AS(manager.run(l.graph, context), InternalError);
#else
    if (status != PassStatus::Changed) CHECK(manager.run(l.graph, context) == RunOutcome::Ok);
    else CHECK_THROWS_AS(manager.run(l.graph, context), InternalError);
#endif
  }
}

TEST_CASE(
    "passes say Unchanged when they changed nothing: layout inference run twice, redistribution with every edge fitting; "
    "propagation and layout inference say Annotated") {
  const char* fitting =
      "parallel: {device_num: 4}\ninputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n"
      "ops:\n  - {name: r, type: ReLU, inputs: [x], in_strategy: [[4, 1]]}\n"
      "  - {name: e, type: Exp, inputs: [r], in_strategy: [[4, 1]]}\noutputs: [e]\n";
  DiagnosticEngine diags("m.yaml", fitting);
  auto [g, settings, gData, gFacts] = *loadModel(fitting, diags, {"m"});
  PassContext context{diags};
  CompileOptions options = optionsFromModel(settings);
  REQUIRE(createStrategyPropagationPass(options)->run(g, context) == PassStatus::Annotated);
  REQUIRE(createLayoutInferencePass(options)->run(g, context) == PassStatus::Annotated);
  CHECK(createLayoutInferencePass(options)->run(g, context) == PassStatus::Unchanged);
  CHECK(createRedistributionPass(options)->run(g, context) == PassStatus::Unchanged);
  CHECK(g.order.size() == 2);

  Loaded needsComm;  // kModel: a partial MatMul feeding a split consumer
  PassContext context2{needsComm.diags};
  CompileOptions options2 = optionsFromModel(needsComm.model.parallel);
  REQUIRE(createStrategyPropagationPass(options2)->run(needsComm.graph, context2) == PassStatus::Annotated);
  REQUIRE(createLayoutInferencePass(options2)->run(needsComm.graph, context2) == PassStatus::Annotated);
  CHECK(createRedistributionPass(options2)->run(needsComm.graph, context2) == PassStatus::Changed);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("the pass contract: the manager refuses a schedule whose pass needs what no earlier pass gave, naming it") {
  // Layout inference alone (--passes layout_inference): no strategies yet.
  {
    Loaded l;
    PassContext context{l.diags};
    CompileOptions options = optionsFromModel(l.model.parallel);
    PassManager manager;
    manager.addPass(2, createLayoutInferencePass(options));
    CHECK(manager.run(l.graph, context) == RunOutcome::Rejected);
    REQUIRE(l.diags.hasErrors());
    CHECK(l.diags.diagnostics()[0].message ==
          "pass 'layout_inference' needs the graph's strategies (sharding_propagation gives them), which no pass before it gave: "
          "run the pipeline from the start, or name those passes in --passes too");
    CHECK_FALSE(l.graph.op(0).parallel->layoutsInferred);  // it did not run
  }
  // A thin pass made from a function declares the same contract; with propagation before it,
  // the schedule holds.
  {
    Loaded l;
    PassContext context{l.diags};
    CompileOptions options = optionsFromModel(l.model.parallel);
    int ran = 0;
    PassManager manager;
    manager.addPass(1, createStrategyPropagationPass(options));
    manager.addPass(2, makePass({"count", "", {GraphFact::Strategies}, {}}, [&](Graph&, PassContext&) {
                      ++ran;
                      return PassStatus::Unchanged;
                    }));
    manager.addPass(3, makePass({"needs_layouts", "", {GraphFact::Layouts}, {}}, [&](Graph&, PassContext&) {
                      ++ran;
                      return PassStatus::Unchanged;
                    }));
    CHECK(manager.run(l.graph, context) == RunOutcome::Rejected);
    CHECK(ran == 1);
    CHECK(l.diags.diagnostics()[0].message.find("pass 'needs_layouts' needs the graph's layouts (layout_inference)") == 0);
  }
}

}  // namespace irc::test
