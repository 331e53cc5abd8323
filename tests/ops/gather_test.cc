// Gather: params' strategy then the indices'; a split vocabulary is partial, with the repeat on
// the left and MindSpore's rule that the indices are then unsplit.
#include <doctest/doctest.h>

#include "tests/ops/common.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {
const char* kGatherInputs = "  - {name: t, shape: [64, 16], dtype: float32}\n  - {name: i, shape: [4, 6], dtype: int32}\n";
}

TEST_CASE("Gather with split indices: dev = params strategy ++ indices strategy") {
  OpFacts f =
      opFacts(oneOpModel(8, kGatherInputs, "{name: g, type: Gather, inputs: [t, i, 0], in_strategy: [[1, 1], [4, 2]]}"), "g");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(1, 1, 4, 2)");
  CHECK(f.inputMaps == std::vector<std::string>{"[3, 2]", "[1, 0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[1, 0, 2]"});
  CHECK(f.outputSlices == std::vector<Shape>{{1, 3, 16}});
  CHECK(f.forward.empty());
}

TEST_CASE("Gather with a split vocabulary: partial output, AllReduce(sum); repeat on the left") {
  OpFacts f =
      opFacts(oneOpModel(8, kGatherInputs, "{name: g, type: Gather, inputs: [t, i, 0], in_strategy: [[4, 1], [1, 1]]}"), "g");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 4, 1, 1, 1)");
  CHECK(f.inputMaps == std::vector<std::string>{"[3, 2]", "[1, 0]"});
  CHECK(f.outputPartial == std::vector<std::vector<int>>{{3}});
  CHECK(f.forward == std::vector<std::string>{"AllReduce sum over 0-1-2-3"});
  OpFacts bad =
      opFacts(oneOpModel(8, kGatherInputs, "{name: g, type: Gather, inputs: [t, i, 0], in_strategy: [[2, 1], [2, 1]]}"), "g");
  CHECK(bad.errors.find("Gather 'g' splits its params' axis dim 2 ways; MindSpore then requires the indices unsplit") !=
        std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("Gather with a scalar index on another dim (aten.select of a fused QKV) passes the batch split through") {
  // BLOOM's fused QKV [2, 16, 4, 3, 16] picks q and k on dim 3. Before: the Gather of a rank-5
  // table could not be split at all, so 2-way data parallelism gathered the batch before it.
  const std::string yaml =
      "parallel: {device_num: 2, search_mode: SM}\n"
      "inputs:\n  - {name: x, shape: [2, 16, 192], dtype: float32}\n"
      "parameters:\n  - {name: i0, shape: [], dtype: int64}\n  - {name: i1, shape: [], dtype: int64}\n"
      "ops:\n  - {name: r0, type: ReLU, inputs: [x], in_strategy: [[2, 1, 1]]}\n"
      "  - {name: v, type: Reshape, inputs: [r0, [2, 16, 4, 3, 16]]}\n"
      "  - {name: q, type: Gather, inputs: [v, i0, 3]}\n"
      "  - {name: k, type: Gather, inputs: [v, i1, 3]}\n"
      "  - {name: s, type: Add, inputs: [q, k]}\n";
  for (std::string mode : {"sharding_propagation", "factor_propagation", "data_parallel"}) {
    std::string text = yaml;
    text.replace(text.find("SM"), 2, mode);
    Compiled c = compileAllRanks(text);
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    int inserted = 0;
    for (const Op& op : c.global.ops) inserted += op.inserted();
    CHECK_MESSAGE(inserted == 0, mode);
    CHECK(verifyCompiled(c).ok);
  }
  // Its looked-up dim stays unsplittable at rank > 2.
  OpFacts facts = opFacts(
      "parallel: {device_num: 2, search_mode: semi_auto}\n"
      "inputs:\n  - {name: t, shape: [4, 3, 8], dtype: float32}\n  - {name: i, shape: [2], dtype: int32}\n"
      "ops:\n  - {name: g, type: Gather, inputs: [t, i, 0], in_strategy: [[2, 1, 1], [1]]}\n",
      "g");
  CHECK(facts.errors.find("splits the looked-up dim of a Gather's params only at rank 1 or 2") != std::string::npos);
}

}  // namespace irc::test
