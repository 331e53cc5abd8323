// Reductions: a split reduced dim leaves the output partial; ReduceMean adds RealDiv.
#include <doctest/doctest.h>

#include "ops/op_rule.h"
#include "tests/ops/common.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {
const char* kX = "  - {name: x, shape: [8, 16], dtype: float32}\n";
}

TEST_CASE("ReduceMean with a split reduced dim: AllReduce(sum) then RealDiv by the group size") {
  OpFacts f = opFacts(oneOpModel(8, kX, "{name: m, type: ReduceMean, inputs: [x, 1], in_strategy: [[2, 4]]}"), "m");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 4)");
  CHECK(f.inputMaps == std::vector<std::string>{"[1, 0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[1]"});
  CHECK(f.outputSlices == std::vector<Shape>{{4}});
  CHECK(f.outputPartial == std::vector<std::vector<int>>{{0}});
  CHECK(f.forward == std::vector<std::string>{"AllReduce sum over 0-1-2-3", "RealDiv 4"});
}

TEST_CASE("ReduceMax keeps dims as -1 and reduces with max; an unsplit reduced dim needs nothing") {
  OpFacts f = opFacts(
      oneOpModel(8, kX, "{name: m, type: ReduceMax, inputs: [x, [1]], attrs: {keep_dims: true}, in_strategy: [[2, 4]]}"), "m");
  REQUIRE(f.errors == "");
  CHECK(f.outputMaps == std::vector<std::string>{"[1, -1]"});
  CHECK(f.forward == std::vector<std::string>{"AllReduce max over 0-1-2-3"});
  OpFacts s = opFacts(oneOpModel(8, kX, "{name: m, type: ReduceSum, inputs: [x, 1], in_strategy: [[8, 1]]}"), "m");
  CHECK(s.forward.empty());
  CHECK(s.outputPartial == std::vector<std::vector<int>>{{}});
}

TEST_CASE("rules: reductions") {
  Graph g = compileAllRanks(oneOpModel(1, "  - {name: x, shape: [2, 3, 4], dtype: float32}\n",
                                       "{name: m, type: ReduceSum, inputs: [x, [0, 2]], attrs: {keep_dims: true}}"))
                .original;
  CHECK(ruleOf(g, g.op(0))->print() == "([i, j, k])->([1, j, 1]) reduction={i, k}");
}

}  // namespace irc::test
