// Concat and Split: the concat / split axis may not be split; other dims pass through.
#include <doctest/doctest.h>

#include "tests/ops/common.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {
const char* kConcatInputs = "  - {name: a, shape: [4, 8], dtype: float32}\n  - {name: b, shape: [4, 8], dtype: float32}\n";
}

TEST_CASE("Concat on axis 0 with dim 1 split") {
  OpFacts f =
      opFacts(oneOpModel(2, kConcatInputs, "{name: c, type: Concat, inputs: [a, b], in_strategy: [[1, 2], [1, 2]]}"), "c");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(1, 2)");
  CHECK(f.inputMaps == std::vector<std::string>{"[1, 0]", "[1, 0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[1, 0]"});
  CHECK(f.outputSlices == std::vector<Shape>{{8, 4}});
  OpFacts bad =
      opFacts(oneOpModel(2, kConcatInputs, "{name: c, type: Concat, inputs: [a, b], in_strategy: [[2, 1], [2, 1]]}"), "c");
  CHECK(bad.errors.find("Concat 'c' cannot split dim 0 of 'a' (2): it is its concat/split axis; its strategy must be 1") !=
        std::string::npos);
}

TEST_CASE("Split on axis 1 with dim 0 split: every output keeps the map") {
  OpFacts f = opFacts(
      oneOpModel(2, kConcatInputs, "{name: s, type: Split, inputs: [a], attrs: {axis: 1, output_num: 2}, in_strategy: [[2, 1]]}"),
      "s");
  REQUIRE(f.errors == "");
  CHECK(f.outputMaps == std::vector<std::string>{"[1, 0]", "[1, 0]"});
  CHECK(f.outputSlices == std::vector<Shape>{{2, 4}, {2, 4}});
}

}  // namespace irc::test
