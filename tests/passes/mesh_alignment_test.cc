// Context parallelism written as plain strategies, as ../shared/tools/gen_cluster_model.py
// writes Llama 3's plan: the projections split the tokens [B*S, H] over DP x CP and the hidden
// over TP, the attention products split [B, heads, S] (DP, TP, CP). MindSpore's in-order device
// matrices disagree on which ranks hold what; the authors ran one mesh [dp, cp, tp]. The
// products are laid on the mesh the query arrives in (passes/propagation/mesh_alignment.h), the
// tokens' axis split where the Reshape to [B, S, heads, d] needs it (splitAxesAtFactors), and the
// keys' gather moved up the chain to before their broadcast, so the only communication left is
// Llama 3's: keys and values gathered over CP at their KV heads, and TP's AllReduces.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include <fmt/format.h>

#include "dumps/plan_code.h"
#include "ir/redist_step.h"
#include "tests/pipeline_util.h"

namespace irc::test {

namespace {

// DP 2 x CP 2 x TP 2 on 8 devices; 2 sequences of 16 tokens, hidden 16, 4 heads of 4, 2 KV
// heads broadcast to the 4 query heads (grouped-query attention, as the generator writes it).
const char* kContextParallel = R"(name: cp
parallel: {device_num: 8, search_mode: sharding_propagation, fully_use_devices: false, training: true}
inputs:
  - {name: ids, shape: [2, 16], dtype: int32}
parameters:
  - {name: emb, shape: [32, 16], dtype: float32}
  - {name: scale, shape: [], dtype: float32}
  - {name: wq, shape: [16, 16], dtype: float32}
  - {name: wk, shape: [16, 8], dtype: float32}
  - {name: wv, shape: [16, 8], dtype: float32}
  - {name: wo, shape: [16, 16], dtype: float32}
ops:
  - {name: embed, type: Gather, inputs: [emb, ids], attrs: {axis: 0}, in_strategy: [[1, 1], [2, 2]]}
  - {name: flat, type: Reshape, inputs: [embed, [32, 16]]}
  - {name: qp, type: MatMul, inputs: [flat, wq], in_strategy: [[4, 1], [1, 2]]}
  - {name: q_r, type: Reshape, inputs: [qp, [2, 16, 4, 4]]}
  - {name: q, type: Transpose, inputs: [q_r, [0, 2, 1, 3]]}
  - {name: kp, type: MatMul, inputs: [flat, wk], in_strategy: [[4, 1], [1, 2]]}
  - {name: k_r, type: Reshape, inputs: [kp, [2, 16, 2, 1, 4]]}
  - {name: k_b, type: BroadcastTo, inputs: [k_r, [2, 16, 2, 2, 4]]}
  - {name: k_m, type: Reshape, inputs: [k_b, [2, 16, 4, 4]]}
  - {name: k, type: Transpose, inputs: [k_m, [0, 2, 1, 3]]}
  - {name: vp, type: MatMul, inputs: [flat, wv], in_strategy: [[4, 1], [1, 2]]}
  - {name: v_r, type: Reshape, inputs: [vp, [2, 16, 2, 1, 4]]}
  - {name: v_b, type: BroadcastTo, inputs: [v_r, [2, 16, 2, 2, 4]]}
  - {name: v_m, type: Reshape, inputs: [v_b, [2, 16, 4, 4]]}
  - {name: v, type: Transpose, inputs: [v_m, [0, 2, 1, 3]]}
  - {name: scores, type: BatchMatMul, inputs: [q, k], attrs: {transpose_b: true}, in_strategy: [[2, 2, 2, 1], [2, 2, 1, 1]]}
  - {name: scaled, type: Mul, inputs: [scores, scale]}
  - {name: probs, type: Softmax, inputs: [scaled], attrs: {axis: -1}}
  - {name: ctx, type: BatchMatMul, inputs: [probs, v], in_strategy: [[2, 2, 2, 1], [2, 2, 1, 1]]}
  - {name: ctx_t, type: Transpose, inputs: [ctx, [0, 2, 1, 3]]}
  - {name: ctx_r, type: Reshape, inputs: [ctx_t, [32, 16]]}
  - {name: o, type: MatMul, inputs: [ctx_r, wo], in_strategy: [[4, 2], [2, 1]]}
outputs: [o]
)";

}  // namespace

TEST_CASE("context parallelism in plain strategies: one mesh [dp, cp, tp], keys and values gathered over CP only") {
  Compiled c = compileAllRanks(kContextParallel);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  // Every forward communication op, by the model op it works for and its type.
  std::map<std::string, std::set<std::string>> communication;
  for (const Op& op : c.global.ops) {
    if (!op.inserted() || op.role == InsertedRole::Mirror) continue;
    if (op.type != "AllGather" && op.type != "AllReduce" && op.type != "AlltoAll" && op.type != "ReduceScatter" &&
        op.type != "StridedSlice")
      continue;
    communication[c.global.op(op.owner).name].insert(op.type);
  }
  // In MindSpore's order the query, the context and the keys were gathered and sliced again
  // on their way between the projections and the products (8 owners). The keys and values are
  // gathered before their broadcast to the query heads (at k_r, v_r: 2 KV heads, not 4).
  CHECK(communication ==
        std::map<std::string, std::set<std::string>>{{"k_r", {"AllGather"}}, {"v_r", {"AllGather"}}, {"o", {"AllReduce"}}});
  // The gathers run over the context ranks: rank 0's partners differ from it in the cp
  // coordinate only (rank = dp * 4 + cp * 2 + tp).
  for (const Op& op : c.global.ops)
    if (op.inserted() && op.type == "AllGather") CHECK(stepGroup(*op.step, 0) == std::vector<int64_t>{0, 2});
  // The products are the ops laid on their query's mesh; the projections kept MindSpore's order.
  for (const Op& op : c.global.ops) {
    if (op.inserted()) continue;
    CAPTURE(op.name);
    CHECK(op.parallel->origin.meshOfOperand == (op.name == "scores" || op.name == "ctx" ? 0 : -1));
  }
  CHECK(verifyCompiled(c).ok);
}

TEST_CASE("propagation's tie-break: a conversion that costs the same on either side of an op moves to the producer's") {
  // The same plan with an elementwise Neg between the keys' and values' projections and their
  // broadcast: gathering before or after the Neg moves the same bytes (a tie), and the
  // conversion keeps moving up the chain to where the broadcast would double it, at k_r and v_r
  // as above; stopping at a tie would leave it after the Neg (at k_b, v_b).
  std::string text = kContextParallel;
  for (const char* x : {"k", "v"}) {
    const std::string b = fmt::format("  - {{name: {}_b, type: BroadcastTo, inputs: [{}_r,", x, x);
    REQUIRE(text.find(b) != std::string::npos);
    text.replace(text.find(b), b.size(),
                 fmt::format("  - {{name: {}_n, type: Neg, inputs: [{}_r]}}\n  - {{name: {}_b, type: BroadcastTo, inputs: [{}_n,",
                             x, x, x, x));
  }
  Compiled c = compileAllRanks(text);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  std::set<std::string> gathered;
  for (const Op& op : c.global.ops)
    if (op.inserted() && op.type == "AllGather") gathered.insert(c.global.op(op.owner).name);
  CHECK(gathered == std::set<std::string>{"k_r", "v_r"});
  CHECK(verifyCompiled(c).ok);
}

TEST_CASE("--mindspore-out writes a re-laid op as a Layout over its mesh, an op in dim order as its strategy") {
  Compiled c = compileAllRanks(kContextParallel);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  std::string code = mindsporeShardCode(c.global, c.options, "");
  // The projection's tokens (DP x CP) and hidden (TP): MindSpore's order, a plain strategy.
  CHECK(code.find("\"qp\": ops.MatMul().shard(((4, 1), (1, 2))),\n") != std::string::npos);
  // The product on the mesh [dp, cp, tp]: batch on d0, heads on d2 (tp), the query's sequence on
  // d1 (cp), the keys' whole. Its plain strategy ((2, 2, 2, 1), (2, 2, 1, 1)) would put heads on
  // the middle axis.
  CHECK(code.find("\"scores\": (lambda layout: ops.BatchMatMul().shard(in_strategy=(layout(\"d0\", \"d2\", \"d1\", "
                  "\"None\"), layout(\"d0\", \"d2\", \"None\", \"None\"))))(Layout((2, 2, 2), (\"d0\", \"d1\", "
                  "\"d2\"))),\n") != std::string::npos);
}

}  // namespace irc::test
