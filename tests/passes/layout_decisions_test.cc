// A value's layout, point by point (docs/architecture.md): a sharding decision holds no layout of
// its own. Propagation writes a result it holds apart (factor propagation's fixed point, a
// Reshape's consumer) as the value's layout; an out_strategy or out_layout is a choice of the
// forward ops whose layout is derived. Layout inference reads both, and run again changes nothing.
#include <doctest/doctest.h>

#include "frontends/yaml/yaml_frontend.h"
#include "ir/layout_notation.h"
#include "ops/op_sharding.h"
#include "passes/layout_inference.h"
#include "passes/strategy_propagation.h"
#include "tests/test_util.h"

namespace irc::test {
namespace {

struct Propagated {
  explicit Propagated(std::string yaml, bool modulesAsDTensor = false) : text(std::move(yaml)) {
    auto loaded = loadModel(text, diags, {"m"});
    REQUIRE(loaded);
    graph = std::move(loaded->graph);
    options = optionsFromModel(loaded->parallel);
    options.modulesAsDTensor = modulesAsDTensor;
    REQUIRE(createStrategyPropagationPass(options)->run(graph, context) == PassStatus::Annotated);
  }
  const Op& op(const std::string& result) const { return graph.op(graph.value(*graph.findValue(result)).producer); }
  const HeapOptional<TensorLayout>& held(const std::string& result) const { return graph.value(*graph.findValue(result)).layout; }
  PassStatus inferLayouts() { return createLayoutInferencePass(options)->run(graph, context); }

  std::string text;
  DiagnosticEngine diags{"m.yaml", text};
  PassContext context{diags};
  Graph graph;
  CompileOptions options;
};

}  // namespace

TEST_CASE("factor propagation's fixed point is the result value's layout; layout inference converts to it, once") {
  // Basic strategy on the disagreeing Add (tests/passes/factor_propagation_test.cc): s computes
  // (dp, None) and the fixed point holds it whole. Propagation writes that as s's layout.
  std::string text = readFile(sourceDir() + "/tests/models/factor_add_disagree.yaml");
  text.replace(text.find("search_mode: factor_propagation"), 31, "search_mode: factor_propagation, factor_strategy: basic");
  Propagated p(text);
  const Op& s = p.op("s");
  CHECK(s.parallel->sharding.conversionOf(0) == OpSharding::Conversion::FactorFixedPoint);
  REQUIRE(p.held("s"));
  CHECK(printAliasLayout(*p.held("s")) == "(None, None)");
  CHECK(!p.held("u"));  // held as computed: no decision, and no layout before inference
  REQUIRE(p.inferLayouts() == PassStatus::Annotated);
  CHECK(printAliasLayout(*s.parallel->beforeConversion[0]) == "(dp, None)");
  CHECK(printAliasLayout(*p.held("s")) == "(None, None)");
  // Run again, it reads its own answer as the decision and changes nothing.
  CHECK(p.inferLayouts() == PassStatus::Unchanged);
  // Propagated again (a second compile of the graph), the inferred layouts are forgotten and
  // the same decision written.
  REQUIRE(createStrategyPropagationPass(p.options)->run(p.graph, p.context) == PassStatus::Annotated);
  REQUIRE(p.held("s"));
  CHECK(printAliasLayout(*p.held("s")) == "(None, None)");
  CHECK(!p.held("u"));
}

TEST_CASE("after propagation a result has a layout only where its op's sharding decided a conversion") {
  // With DTensor's forward fill after factor propagation (a `modules:` plan's unlisted ops), s is
  // filled again from its producers: the fixed point's conversion, and its layout, are gone.
  std::string text = readFile(sourceDir() + "/tests/models/factor_add_disagree.yaml");
  text.replace(text.find("search_mode: factor_propagation"), 31, "search_mode: factor_propagation, factor_strategy: basic");
  for (bool fill : {false, true}) {
    CAPTURE(fill);
    Propagated p(text, fill);
    CHECK(p.op("s").parallel->sharding.conversionOf(0) ==
          (fill ? OpSharding::Conversion::None : OpSharding::Conversion::FactorFixedPoint));
    for (OpId id : p.graph.order)
      for (size_t r = 0; r < p.graph.op(id).results.size(); ++r)
        CHECK(bool(p.graph.value(p.graph.op(id).results[r]).layout) ==
              (p.graph.op(id).parallel->sharding.conversionOf(r) != OpSharding::Conversion::None));
  }
}

TEST_CASE("a Reshape's consumer decides the Reshape's result layout: converted after the Reshape, run twice alike") {
  // tests/models/reshape_info_split.yaml: unflat carries act's (8, 1) onto dim 0; head wants dim 2
  // split 8 ways: propagation holds unflat's result as head needs it.
  Propagated p(readFile(sourceDir() + "/tests/models/reshape_info_split.yaml"));
  CHECK(p.op("unflat").parallel->sharding.conversionOf(0) == OpSharding::Conversion::ReshapeConsumer);
  REQUIRE(p.held("unflat"));
  CHECK(p.held("unflat")->sliceShape() == Shape{32, 4, 1});
  REQUIRE(p.inferLayouts() == PassStatus::Annotated);
  CHECK(p.op("unflat").parallel->beforeConversion[0]->sliceShape() == Shape{4, 4, 8});
  CHECK(p.inferLayouts() == PassStatus::Unchanged);
}

TEST_CASE("out_layout's reduce-scatter is a choice of the forward ops; its layout is derived, partial axes on dim 0") {
  // k on (b, a) (b major), the partial sum reduce-scattered on dim 0 after dp: (dp, a, b).
  Propagated p(
      "parallel: {device_num: 8, device_matrix: [2, 2, 2], alias_name: [dp, a, b]}\n"
      "inputs:\n  - {name: x, shape: [32, 64], dtype: float32}\n"
      "parameters:\n  - {name: w, shape: [64, 16], dtype: float32}\n"
      "ops:\n  - {name: mm, type: MatMul, inputs: [x, w], in_layout: [[dp, [b, a]], [[b, a], None]], out_layout: [[[dp, a, b], "
      "None]]}\n"
      "  - {name: act, type: GeLU, inputs: [mm]}\noutputs: [act]\n");
  const OpSharding& mm = p.op("mm").parallel->sharding;
  CHECK(mm.scatters(0));
  CHECK(!p.held("mm"));  // no layout is decided before inference
  const OpRule& rule = *p.op("mm").parallel->rule;
  CHECK(printAliasLayout(finalResultLayout(rule, mm, 0, {32, 16})) == "((dp, a, b), None)");
  REQUIRE(p.inferLayouts() == PassStatus::Annotated);
  CHECK(printAliasLayout(*p.held("mm")) == "((dp, a, b), None)");
  REQUIRE(p.op("mm").parallel->forwardOps.size() == 1);
  CHECK(p.op("mm").parallel->forwardOps[0].step.kind == RedistStep::Kind::ReduceScatter);
  CHECK(p.inferLayouts() == PassStatus::Unchanged);
}

TEST_CASE("out_strategy's reduce-scatter names k's axis on dim 0 as MindSpore's tensor map does, also where k is unsplit") {
  // ((2, 1), (1, 4)): device matrix (2, 1, 4), k on the size-1 middle axis; out_strategy ((2, 4))
  // is (m * k, n): mm's value is laid out ((2, 1), 0), nothing to reduce.
  Propagated p(
      "parallel: {device_num: 8}\ninputs:\n  - {name: x, shape: [32, 64], dtype: float32}\n"
      "parameters:\n  - {name: w, shape: [64, 16], dtype: float32}\n"
      "ops:\n  - {name: mm, type: MatMul, inputs: [x, w], in_strategy: [[2, 1], [1, 4]], out_strategy: [[2, 4]]}\n"
      "  - {name: act, type: GeLU, inputs: [mm]}\noutputs: [act]\n");
  REQUIRE(p.inferLayouts() == PassStatus::Annotated);
  CHECK(p.held("mm")->tensorMapEntries() == std::vector<std::vector<int>>{{2, 1}, {0}});
  CHECK(p.op("mm").parallel->forwardOps.empty());
}

}  // namespace irc::test
