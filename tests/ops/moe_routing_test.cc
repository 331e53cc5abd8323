// MoeDispatch and MoeCombine: the slots on hand-computed values (a choice past its expert's
// capacity dropped), their rules, and an expert-parallel layer verified on every rank.
#include <doctest/doctest.h>

#include "ops/op_rule.h"
#include "tests/ops/common.h"

namespace irc::test::moe_routing {

TEST_CASE("MoeDispatch and MoeCombine: slots in token order, a full expert drops the choice, the combine weights each slot") {
  // One group of 3 tokens [1 2], [3 4], [5 6]; top-2 choices (0, 1), (0, 1), (0, 0); 2 experts of 2
  // slots. Token 0 takes slot 0 of experts 0 and 1, token 1 slot 1 of both; token 2's choices
  // find expert 0 full: dropped.
  TensorValue x{{1, 3, 2}, {1, 2, 3, 4, 5, 6}};
  TensorValue indices{{1, 3, 2}, {0, 1, 0, 1, 0, 0}};
  auto slots = evaluateOne("MoeDispatch", {x, indices}, {}, {{"num_experts", int64_t{2}}, {"capacity", int64_t{2}}});
  REQUIRE(slots.size() == 1);
  CHECK(slots[0].shape == Shape{1, 2, 2, 2});
  CHECK(slots[0].data == std::vector<double>{1, 2, 3, 4, 1, 2, 3, 4});
  // Expert 0's slots hold [10 20], [30 40]; expert 1's [100 200], [300 400]. Token 0 gets
  // 0.5 [10 20] + 0.25 [100 200], token 1 1 [30 40] + 2 [300 400], token 2 nothing.
  TensorValue y{{1, 2, 2, 2}, {10, 20, 30, 40, 100, 200, 300, 400}};
  TensorValue weights{{1, 3, 2}, {0.5, 0.25, 1, 2, 3, 4}};
  auto combined = evaluateOne("MoeCombine", {y, indices, weights}, {}, {});
  REQUIRE(combined.size() == 1);
  CHECK(combined[0].shape == Shape{1, 3, 2});
  CHECK(combined[0].data == std::vector<double>{30, 60, 630, 840, 0, 0});
}

TEST_CASE("MoeDispatch and MoeCombine: groups and the hidden dim split, the slots' dims whole; verified split each way") {
  const std::string in = "  - {name: x, shape: [4, 8, 6], dtype: float32}\n  - {name: idx, shape: [4, 8, 2], dtype: int32}\n";
  Compiled d =
      compileAllRanks(oneOpModel(1, in, "{name: d, type: MoeDispatch, inputs: [x, idx], attrs: {num_experts: 4, capacity: 4}}"));
  REQUIRE(d.errors == "");
  CHECK(ruleOf(d.original, d.original.op(0))->print() == "([i, j, k], [i, j, l])->([i, m, n, k]) replicated={j, l, m, n}");
  for (const char* strategy : {"[[4, 1, 1], [4, 1, 1]]", "[[2, 1, 2], [2, 1, 1]]"}) {
    Compiled c = compileAllRanks(oneOpModel(
        4, in,
        std::string("{name: d, type: MoeDispatch, inputs: [x, idx], attrs: {num_experts: 4, capacity: 4}, in_strategy: ") +
            strategy + "}"));
    REQUIRE(c.errors == "");
    CHECK(verifyCompiled(c).ok);
  }
  // The sequence may not be split: a rank's slots depend on the tokens before its own.
  Compiled bad = compileAllRanks(oneOpModel(2, in,
                                            "{name: d, type: MoeDispatch, inputs: [x, idx], attrs: {num_experts: 4, capacity: "
                                            "4}, in_strategy: [[1, 2, 1], [1, 2, 1]]}"));
  CHECK(bad.errors.find("a dim the slots are counted along") != std::string::npos);

  const std::string cin =
      "  - {name: y, shape: [4, 4, 4, 6], dtype: float32}\n  - {name: idx, shape: [4, 8, 2], dtype: int32}\n"
      "  - {name: w, shape: [4, 8, 2], dtype: float32}\n";
  Compiled cm = compileAllRanks(oneOpModel(4, cin,
                                           "{name: c, type: MoeCombine, inputs: [y, idx, w], in_strategy: "
                                           "[[2, 1, 1, 2], [2, 1, 1], [2, 1, 1]]}"));
  REQUIRE(cm.errors == "");
  CHECK(ruleOf(cm.original, cm.original.op(0))->print() ==
        "([i, j, k, l], [i, m, n], [i, m, n])->([i, m, l]) replicated={j, k, m, n}");
  CHECK(verifyCompiled(cm).ok);
}

}  // namespace irc::test::moe_routing
