// Gather: params' strategy then the indices'; a split vocabulary is partial, with the repeat on
// the left and MindSpore's rule that the indices are then unsplit.
#include <doctest/doctest.h>

#include "tests/ops/common.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {
const char* kIn = "  - {name: t, shape: [64, 16], dtype: float32}\n  - {name: i, shape: [4, 6], dtype: int32}\n";
}

TEST_CASE("Gather with split indices: dev = params strategy ++ indices strategy") {
  OpFacts f = opFacts(oneOpModel(8, kIn, "{name: g, type: Gather, inputs: [t, i, 0], in_strategy: [[1, 1], [4, 2]]}"), "g");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(1, 1, 4, 2)");
  CHECK(f.inputMaps == std::vector<std::string>{"[3, 2]", "[1, 0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[1, 0, 2]"});
  CHECK(f.outputSlices == std::vector<Shape>{{1, 3, 16}});
  CHECK(f.forward.empty());
}

TEST_CASE("Gather with a split vocabulary: partial output, AllReduce(sum); repeat on the left") {
  OpFacts f = opFacts(oneOpModel(8, kIn, "{name: g, type: Gather, inputs: [t, i, 0], in_strategy: [[4, 1], [1, 1]]}"), "g");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 4, 1, 1, 1)");
  CHECK(f.inputMaps == std::vector<std::string>{"[3, 2]", "[1, 0]"});
  CHECK(f.outputPartial == std::vector<std::vector<int>>{{3}});
  CHECK(f.forward == std::vector<std::string>{"AllReduce sum over 0-1-2-3"});
  OpFacts bad = opFacts(oneOpModel(8, kIn, "{name: g, type: Gather, inputs: [t, i, 0], in_strategy: [[2, 1], [2, 1]]}"), "g");
  CHECK(bad.errors.find("Gather 'g' splits its params' axis dim 2 ways; MindSpore then requires the indices unsplit") != std::string::npos);
}

}  // namespace irc::test
