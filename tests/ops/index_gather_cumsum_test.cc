// GatherElements, GatherNd and CumSum: kernels on hand-computed values, rules, and verify under
// splits of the dims that pass through.
#include <doctest/doctest.h>

#include "ops/op_defs.h"
#include "ops/op_rule.h"
#include "ops/reference_ops.h"
#include "ops/shape_inference.h"
#include "tests/ops/common.h"
#include "tests/pipeline_util.h"

namespace irc::test {

TEST_CASE("GatherElements, GatherNd, CumSum: kernels on hand-computed values") {
  // numpy.take_along_axis([[1, 2], [3, 4]], [[0, 0], [1, 0]], axis=1) = [[1, 1], [4, 3]]; -1 counts from the end.
  TensorValue data{{2, 2}, {1, 2, 3, 4}};
  auto ge = evaluateOne("GatherElements", {data, TensorValue{{2, 2}, {0, 0, -1, 0}}}, {}, {{"axis", int64_t{1}}});
  CHECK(ge[0].shape == Shape{2, 2});
  CHECK(ge[0].data == std::vector<double>{1, 1, 4, 3});
  CHECK_THROWS_AS(evaluateOne("GatherElements", {data, TensorValue{{2, 2}, {0, 2, 0, 0}}}, {}, {{"axis", int64_t{1}}}),
                  ReferenceError);
  // GatherNd: indices [[1, 0], [0, 1]] pick data[1][0] = 3 and data[0][1] = 2; [[1]] picks row 1.
  auto nd = evaluateOne("GatherNd", {data, TensorValue{{2, 2}, {1, 0, 0, 1}}}, {}, {});
  CHECK(nd[0].shape == Shape{2});
  CHECK(nd[0].data == std::vector<double>{3, 2});
  auto rows = evaluateOne("GatherNd", {data, TensorValue{{1, 1}, {1}}}, {}, {});
  CHECK(rows[0].shape == Shape{1, 2});
  CHECK(rows[0].data == std::vector<double>{3, 4});
  // batch_dims 1: each batch row picks its own element.
  auto batched = evaluateOne("GatherNd", {data, TensorValue{{2, 1}, {1, 0}}}, {}, {{"batch_dims", int64_t{1}}});
  CHECK(batched[0].data == std::vector<double>{2, 3});
  TensorValue x{{1, 4}, {1, 2, 3, 4}};
  CHECK(evaluateOne("CumSum", {x}, {Attribute(int64_t{1})}, {})[0].data == std::vector<double>{1, 3, 6, 10});
  CHECK(evaluateOne("CumSum", {x}, {Attribute(int64_t{-1})}, {{"exclusive", true}})[0].data == std::vector<double>{0, 1, 3, 6});
  CHECK(evaluateOne("CumSum", {x}, {Attribute(int64_t{1})}, {{"reverse", true}})[0].data == std::vector<double>{10, 9, 7, 4});
  CHECK(evaluateOne("CumSum", {x}, {Attribute(int64_t{1})}, {{"reverse", true}, {"exclusive", true}})[0].data ==
        std::vector<double>{9, 7, 4, 0});
}

TEST_CASE("GatherElements, GatherNd, CumSum rules; a position-id model verifies with its batch split") {
  std::string in = "  - {name: x, shape: [8, 16], dtype: float32}\n  - {name: i, shape: [8, 4], dtype: int64}\n";
  Compiled ge = compileAllRanks(oneOpModel(1, in, "{name: g, type: GatherElements, inputs: [x, i], attrs: {axis: 1}}"));
  REQUIRE(ge.errors == "");
  CHECK(ruleOf(ge.original, ge.original.op(0))->print() == "([i, k], [i, j])->([i, j]) replicated={k}");
  Compiled nd = compileAllRanks(
      oneOpModel(1, "  - {name: x, shape: [6, 8, 16], dtype: float32}\n  - {name: i, shape: [4, 2], dtype: int64}\n",
                 "{name: g, type: GatherNd, inputs: [x, i]}"));
  REQUIRE(nd.errors == "");
  CHECK(ruleOf(nd.original, nd.original.op(0))->print() == "([k, l, m], [i, j])->([i, m]) replicated={j, k, l}");
  Compiled cs = compileAllRanks(
      oneOpModel(1, "  - {name: x, shape: [8, 16], dtype: float32}\n", "{name: c, type: CumSum, inputs: [x, 1]}"));
  REQUIRE(cs.errors == "");
  CHECK(ruleOf(cs.original, cs.original.op(0))->print() == "([i, j])->([i, j]) replicated={j}");
  // Llama's dynamic-shape position ids: a CumSum of the attention mask, then a lookup.
  std::string yaml =
      "parallel: {device_num: 4}\ninputs:\n  - {name: mask, shape: [8, 16], dtype: float32}\n"
      "  - {name: table, shape: [8, 16], dtype: float32}\n"
      "ops:\n  - {name: pos, type: CumSum, inputs: [mask, 1], in_strategy: [[4, 1]]}\n"
      "  - {name: ids, type: Cast, inputs: [pos, int64]}\n"
      "  - {name: clipped, type: Minimum, inputs: [ids, 15]}\n"
      "  - {name: looked, type: GatherElements, inputs: [table, clipped], attrs: {axis: 1}}\n"
      "outputs: [looked]\n";
  checkVerifiesInBothModes(yaml);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("Argmax/Argmin and Einsum: kernels, rules, and an einsum attention verified with its heads and contraction split") {
  TensorValue x{{2, 3}, {1, 5, 5, 7, 0, 7}};
  CHECK(evaluateOne("Argmax", {x}, {}, {{"axis", int64_t{1}}})[0].data == std::vector<double>{1, 0});
  CHECK(evaluateOne("Argmax", {x}, {}, {{"axis", int64_t{1}}, {"select_last_index", true}})[0].data == std::vector<double>{2, 2});
  CHECK(evaluateOne("Argmin", {x}, {}, {{"axis", int64_t{0}}, {"keep_dims", true}})[0].shape == Shape{1, 3});
  // ij,jk->ik on [[1, 2]] x [[3], [4]] = 11; the implicit form of "ij,jk" is "ik".
  TensorValue a{{1, 2}, {1, 2}}, b{{2, 1}, {3, 4}};
  auto mm = evaluateOne("Einsum", {a, b}, {}, {{"equation", std::string("ij,jk")}});
  CHECK(mm[0].shape == Shape{1, 1});
  CHECK(mm[0].data == std::vector<double>{11});
  CHECK(evaluateOne("Einsum", {a}, {}, {{"equation", std::string("ij->ji")}})[0].shape == Shape{2, 1});
  Compiled am = compileAllRanks(
      oneOpModel(1, "  - {name: x, shape: [8, 16], dtype: float32}\n", "{name: m, type: Argmax, inputs: [x], attrs: {axis: 1}}"));
  REQUIRE(am.errors == "");
  CHECK(ruleOf(am.original, am.original.op(0))->print() == "([i, j])->([i]) replicated={j}");
  std::string in = "  - {name: q, shape: [2, 4, 8, 16], dtype: float32}\n  - {name: k, shape: [2, 4, 8, 16], dtype: float32}\n";
  Compiled es =
      compileAllRanks(oneOpModel(1, in, "{name: s, type: Einsum, inputs: [q, k], attrs: {equation: 'bhqd,bhkd->bhqk'}}"));
  REQUIRE(es.errors == "");
  CHECK(ruleOf(es.original, es.original.op(0))->print() == "([i, j, k, m], [i, j, l, m])->([i, j, k, l]) reduction={m}");
  for (const char* strategy : {"[[1, 4, 1, 1], [1, 4, 1, 1]]", "[[2, 1, 1, 2], [2, 1, 1, 2]]"}) {
    Compiled c =
        compileAllRanks(oneOpModel(4, in,
                                   std::string("{name: s, type: Einsum, inputs: [q, k], attrs: {equation: 'bhqd,bhkd->bhqk'}, "
                                               "in_strategy: ") +
                                       strategy + "}"));
    REQUIRE(c.errors == "");
    VerifyResult r = verifyCompiled(c);
    CHECK(r.ok);
  }
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("ScatterElements and ScatterNd: kernels on hand-computed values; a masked update verifies with its rows split") {
  TensorValue data{{2, 3}, {0, 0, 0, 0, 0, 0}};
  // Row 0 writes 5 at column 2, row 1 writes 7 at column -3 (= 0).
  auto se = evaluateOne("ScatterElements", {data, TensorValue{{2, 1}, {2, -3}}, TensorValue{{2, 1}, {5, 7}}}, {},
                        {{"axis", int64_t{1}}});
  CHECK(se[0].data == std::vector<double>{0, 0, 5, 7, 0, 0});
  // ScatterNd writes row 1 whole.
  auto nd = evaluateOne("ScatterNd", {data, TensorValue{{1, 1}, {1}}, TensorValue{{1, 3}, {1, 2, 3}}}, {}, {});
  CHECK(nd[0].data == std::vector<double>{0, 0, 0, 1, 2, 3});
  // Reductions combine with what is there, a repeated index with its earlier updates.
  TensorValue ones{{2, 3}, {1, 1, 1, 1, 1, 1}};
  auto add = evaluateOne("ScatterElements", {ones, TensorValue{{2, 2}, {0, 0, 2, 1}}, TensorValue{{2, 2}, {5, 6, 7, 8}}}, {},
                         {{"axis", int64_t{1}}, {"reduction", std::string("add")}});
  CHECK(add[0].data == std::vector<double>{12, 1, 1, 1, 9, 8});
  auto mx = evaluateOne("ScatterNd", {ones, TensorValue{{2, 1}, {1, 1}}, TensorValue{{2, 3}, {0, 3, 2, 4, -1, 1}}}, {},
                        {{"reduction", std::string("max")}});
  CHECK(mx[0].data == std::vector<double>{1, 1, 1, 4, 3, 2});
  CHECK_THROWS(evaluateOne("ScatterNd", {ones, TensorValue{{1, 1}, {1}}, TensorValue{{1, 3}, {1, 2, 3}}}, {},
                           {{"reduction", std::string("xor")}}));
  std::string yaml =
      "parallel: {device_num: 4}\ninputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n"
      "  - {name: i, shape: [8, 2], dtype: int64}\n  - {name: u, shape: [8, 2], dtype: float32}\n"
      "ops:\n  - {name: r, type: ReLU, inputs: [x], in_strategy: [[4, 1]]}\n"
      "  - {name: s, type: ScatterElements, inputs: [r, i, u], attrs: {axis: 1}}\n"
      "  - {name: e, type: Exp, inputs: [s]}\noutputs: [e]\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE(c.errors == "");
  CHECK(ruleOf(c.original, c.original.op(1))->print() == "([i, j], [i, k], [i, k])->([i, j]) replicated={j, k}");
  checkVerifiesInBothModes(yaml);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("TopK: the k best along an axis, ties to the lower index; the axis whole, the batch split; an MoE router verifies") {
  TensorValue x{{2, 4}, {1, 5, 5, 3, 9, 0, 7, 7}};
  auto best = evaluateOne("TopK", {x}, {Attribute(int64_t{2})}, {});
  REQUIRE(best.size() == 2);
  CHECK(best[0].shape == Shape{2, 2});
  CHECK(best[0].data == std::vector<double>{5, 5, 9, 7});
  CHECK(best[1].data == std::vector<double>{1, 2, 0, 2});  // 5 at 1 before 5 at 2; 7 at 2 before 7 at 3
  auto smallest = evaluateOne("TopK", {x}, {Attribute(int64_t{1})}, {{"largest", false}, {"axis", int64_t{0}}});
  CHECK(smallest[0].data == std::vector<double>{1, 0, 5, 3});
  CHECK(smallest[1].data == std::vector<double>{0, 1, 0, 0});
  Compiled c =
      compileAllRanks(oneOpModel(1, "  - {name: x, shape: [8, 16], dtype: float32}\n", "{name: t, type: TopK, inputs: [x, 4]}"));
  REQUIRE(c.errors == "");
  CHECK(ruleOf(c.original, c.original.op(0))->print() == "([i, j])->([i, k], [i, k]) replicated={j, k}");
  // A mixture-of-experts router: scores, softmax, the 2 best experts per token, batch split.
  checkVerifiesInBothModes(
      "parallel: {device_num: 4}\ninputs:\n  - {name: h, shape: [8, 16], dtype: float32}\n"
      "parameters:\n  - {name: router, shape: [16, 8], dtype: float32}\n"
      "ops:\n  - {name: scores, type: MatMul, inputs: [h, router], in_strategy: [[4, 1], [1, 1]]}\n"
      "  - {name: p, type: Softmax, inputs: [scores]}\n"
      "  - {name: top, type: TopK, inputs: [p, 2]}\n"
      "  - {name: w, type: ReLU, inputs: ['top:0']}\n");
}

}  // namespace irc::test
