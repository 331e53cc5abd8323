// Softmax and LayerNorm: the softmax axis and the normalized dims may not be split.
#include <doctest/doctest.h>

#include "ops/op_rule.h"
#include "tests/ops/common.h"
#include "tests/pipeline_util.h"

namespace irc::test {

TEST_CASE("Softmax: identity maps; splitting its axis is rejected") {
  std::string in = "  - {name: x, shape: [8, 16], dtype: float32}\n";
  OpFacts f = opFacts(oneOpModel(2, in, "{name: s, type: Softmax, inputs: [x], in_strategy: [[2, 1]]}"), "s");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 1)");
  CHECK(f.outputMaps == std::vector<std::string>{"[1, 0]"});
  OpFacts bad = opFacts(oneOpModel(2, in, "{name: s, type: Softmax, inputs: [x], in_strategy: [[1, 2]]}"), "s");
  CHECK(bad.errors.find("error: Softmax 's' cannot split dim 1 of 'x' (2): it is its softmax axis; its strategy must be 1") !=
        std::string::npos);
}

TEST_CASE("LayerNorm: gamma and beta take the trailing strategy; mean and variance -1 from begin_norm_axis") {
  std::string in =
      "  - {name: x, shape: [8, 16], dtype: float32}\n  - {name: g, shape: [16], dtype: float32}\n"
      "  - {name: b, shape: [16], dtype: float32}\n";
  OpFacts f = opFacts(oneOpModel(2, in, "{name: ln, type: LayerNorm, inputs: [x, g, b], in_strategy: [[2, 1], [1], [1]]}"), "ln");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 1)");
  CHECK(f.inputMaps == std::vector<std::string>{"[1, 0]", "[0]", "[0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[1, 0]", "[1, -1]", "[1, -1]"});
  OpFacts bad =
      opFacts(oneOpModel(4, in, "{name: ln, type: LayerNorm, inputs: [x, g, b], in_strategy: [[2, 2], [2], [2]]}"), "ln");
  CHECK(bad.errors.find("LayerNorm 'ln' cannot split dim 1 of 'x' (2): it is a normalized dim; its strategy must be 1") !=
        std::string::npos);
}

}  // namespace irc::test
