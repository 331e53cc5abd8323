// The verifier's check of inserted collectives: each step against its own shapes, and each
// edge's chain of steps from the producer's layout to the consumer's (ops/verifier.cc).
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <string>

#include "ops/verifier.h"
#include "tests/pipeline_util.h"

namespace irc::test {

namespace {

// mm's result is partial over the 4 ranks (its contraction split) and completed right after it
// (a forward AllReduce); r needs it split on dim 0: a Split on the edge mm -> r; the ReLU's
// result is gathered for the Tanh, which reads it whole.
const char* kModel =
    "parallel: {device_num: 4, search_mode: semi_auto, redistribution: mindspore}\n"
    "inputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n"
    "parameters:\n  - {name: w, shape: [16, 8], dtype: float32}\n"
    "ops:\n  - {name: mm, type: MatMul, inputs: [x, w], in_strategy: [[1, 4], [4, 1]]}\n"
    "  - {name: r, type: ReLU, inputs: [mm], in_strategy: [[4, 1]]}\n"
    "  - {name: t, type: Tanh, inputs: [r], in_strategy: [[1, 1]]}\n"
    "outputs: [t]\n";

Graph compiledGlobal() {
  Graph global;
  Compiled c = compileAllRanks(kModel, std::nullopt, [&](Graph& g) { global = g; });
  REQUIRE(c.errors.empty());
  return global;
}

bool mentions(const std::vector<std::string>& problems, const std::string& text) {
  return std::any_of(problems.begin(), problems.end(), [&](const std::string& p) { return p.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("the verifier follows every edge's steps from the producer's slice to the consumer's") {
  Graph g = compiledGlobal();
  REQUIRE(g.redistributions.size() == 2);
  CHECK(verifyGraph(g).empty());

  SUBCASE("a step whose result shape its group cannot make") {
    OpId first = g.redistributions.back().ops.front();  // the AllGather of r's slices for t
    auto step = std::make_shared<RedistStep>(*g.op(first).step);
    step->localAfter[0] *= 2;
    g.op(first).step = step;
    auto problems = verifyGraph(g);
    CHECK(mentions(problems, "does not match the step's group of 4"));
    CHECK(mentions(problems, "ends at a (16, 8) slice; 't' needs (8, 8)"));
  }
  SUBCASE("a chain that skips its first step") {
    RedistributionRecord& edge = g.redistributions.back();
    edge.ops.erase(edge.ops.begin());
    CHECK(mentions(verifyGraph(g), "ends at a (2, 8) slice; 't' needs (8, 8)"));
  }
  SUBCASE("a partial sum the steps never complete") {
    RedistributionRecord& edge = g.redistributions.front();  // mm -> r: one Split
    REQUIRE(edge.from.partialAxes.empty());
    const auto& meshDims = edge.from.mesh.dims;
    edge.from.partialAxes = {static_cast<int>(std::max_element(meshDims.begin(), meshDims.end()) - meshDims.begin())};
    auto problems = verifyGraph(g);
    INFO(fmt::format("{}", fmt::join(problems, "\n")));
    CHECK(mentions(problems, "the redistribution of 'mm' into 'r' sums over 1 ranks; its layouts need 4"));
  }
}

}  // namespace irc::test
