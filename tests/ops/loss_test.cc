// SoftmaxCrossEntropyWithLogits: logits and labels alike, the class dim whole; loss map [n-1].
#include <doctest/doctest.h>

#include "ops/op_rule.h"
#include "tests/ops/common.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {
const char* kLossInputs = "  - {name: l, shape: [8, 10], dtype: float32}\n  - {name: y, shape: [8, 10], dtype: float32}\n";
}

TEST_CASE("cross entropy: batch split, loss [1], grad identity") {
  OpFacts f =
      opFacts(oneOpModel(2, kLossInputs,
                         "{name: ce, type: SoftmaxCrossEntropyWithLogits, inputs: [l, y], in_strategy: [[2, 1], [2, 1]]}"),
              "ce");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 1)");
  CHECK(f.outputMaps == std::vector<std::string>{"[1]", "[1, 0]"});
  CHECK(f.outputSlices == std::vector<Shape>{{4}, {4, 10}});
  OpFacts bad =
      opFacts(oneOpModel(2, kLossInputs,
                         "{name: ce, type: SoftmaxCrossEntropyWithLogits, inputs: [l, y], in_strategy: [[1, 2], [1, 2]]}"),
              "ce");
  CHECK(bad.errors.find(
            "SoftmaxCrossEntropyWithLogits 'ce' cannot split dim 1 of 'l' (2): it is the class dim; its strategy must be 1") !=
        std::string::npos);
}

TEST_CASE("rules: loss, gather, one hot") {
  Graph g =
      compileAllRanks(oneOpModel(1, kLossInputs, "{name: ce, type: SoftmaxCrossEntropyWithLogits, inputs: [l, y]}")).original;
  CHECK(ruleOf(g, g.op(0))->print() == "([i, j], [i, j])->([i], [i, j]) replicated={j}");
  Graph h = compileAllRanks(oneOpModel(1, "  - {name: i, shape: [4], dtype: int32}\n",
                                       "{name: o, type: OneHot, inputs: [i, 8, 1, 0], attrs: {axis: 0}}"))
                .original;
  CHECK(ruleOf(h, h.op(0))->print() == "([i])->([j, i])");
}

}  // namespace irc::test
