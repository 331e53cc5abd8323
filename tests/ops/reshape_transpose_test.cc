// Transpose permutes the map; Reshape has no strategy and compound factors (seed 003's examples).
#include <doctest/doctest.h>

#include "ir/layout_notation.h"
#include "ops/op_rule.h"
#include "tests/ops/common.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {
std::string reshapeRule(const char* in, const char* out) {
  Graph g = compileAllRanks(oneOpModel(1, std::string("  - {name: x, shape: ") + in + ", dtype: float32}\n",
                                       std::string("{name: r, type: Reshape, inputs: [x, ") + out + "]}"))
                .original;
  return ruleOf(g, g.op(0))->print();
}
}  // namespace

TEST_CASE("Transpose: the output map is the input map permuted") {
  OpFacts f = opFacts(oneOpModel(8, "  - {name: x, shape: [8, 16], dtype: float32}\n",
                                 "{name: t, type: Transpose, inputs: [x, [1, 0]], in_strategy: [[2, 4]]}"),
                      "t");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 4)");
  CHECK(f.inputMaps == std::vector<std::string>{"[1, 0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[0, 1]"});
  CHECK(f.outputSlices == std::vector<Shape>{{4, 4}});
}

TEST_CASE("Reshape rules in compound factors, as in the seed's examples") {
  CHECK(reshapeRule("[2, 4, 32]", "[8, 32]") == "([i, j, k])->([(ij), k])");
  CHECK(reshapeRule("[8, 32]", "[2, 4, 32]") == "([(ij), k])->([i, j, k])");
  CHECK(reshapeRule("[8, 4]", "[2, 16]") == "([(ij), k])->([i, (jk)])");
  // No common refinement: every dim of the stretch is replicated.
  CHECK(reshapeRule("[6, 4]", "[4, 6]") == "([i, j])->([k, l]) replicated={i, j, k, l}");
  CHECK(reshapeRule("[8, 1, 4]", "[32]") == "([i, 1, j])->([(ij)])");
}

TEST_CASE("a Reshape never splits the minor factor of a merged dim while the major one is whole") {
  // x (8, 16) split on dim 1; reshaped to (4, 32): dim 1 = (2 x 16) cannot hold the split.
  std::string yaml =
      "parallel: {device_num: 4, search_mode: semi_auto}\ninputs:\n  - {name: x, shape: [8, 16], dtype: float32}\nops:\n"
      "  - {name: t, type: ReLU, inputs: [x], in_strategy: [[1, 4]]}\n  - {name: r, type: Reshape, inputs: [t, [4, 32]]}\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE(c.errors == "");
  const Op& r = c.global.op(c.global.value(*c.global.findValue("r")).producer);
  CHECK(printTensorMapIndex(r.parallel->outputLayouts[0]) == "[-1, -1]");
  CHECK(r.parallel->outputLayouts[0].sliceShape() == Shape{4, 32});
  CHECK(verifyCompiled(c).ok);
}

}  // namespace irc::test
