// The spec's changes of this round that are not a pass of their own: negative Transpose perms
// (ops.md), OneHot's strategy form (parallel-semantics.md §2) and the report's
// ops[].inputs[i].value (report.md).
#include <doctest/doctest.h>

#include "dumps/report.h"
#include "cost/step_cost.h"
#include "tests/check_lines.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace irc::test {

TEST_CASE("Transpose takes perm entries in [-rank, rank), counted from the end when negative") {
  std::string yaml =
      "parallel: {device_num: 4}\ninputs:\n  - {name: x, shape: [4, 8, 2], dtype: float32}\n"
      "ops:\n  - {name: t, type: Transpose, inputs: [x, [-1, 0, -2]], in_strategy: [[2, 2, 1]]}\n"
      "  - {name: r, type: ReLU, inputs: [t]}\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE(c.errors.empty());
  CHECK(c.global.value(*c.global.findValue("t")).type.shape == Shape{2, 4, 8});
  CHECK(verifyCompiled(c).ok);
  TempDir tmp;
  writeFile(tmp.path() + "/t.yaml", yaml);
  REQUIRE(runIrc({"t.yaml", "--dump-after", "parse", "-q"}, tmp.path()).exitCode == 0);
  CHECK(readFile(tmp.path() + "/t_ir/rank_0/parse_0000.ir").find("Transpose(%para1_x, (-1, 0, -2))") != std::string::npos);
  std::string bad = yaml;
  bad.replace(bad.find("[-1, 0, -2]"), 11, "[-1, 0, 2]");  // -1 and 2 are the same dim
  writeFile(tmp.path() + "/bad.yaml", bad);
  RunResult r = runIrc({"bad.yaml"}, tmp.path());
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("perm (-1, 0, 2) is not a permutation of 0 .. 2 (entries in [-3, 3)") != std::string::npos);
}

TEST_CASE("OneHot's strategy is ((out), (), ()) on the type line and in primitive_attrs alike") {
  TempDir tmp;
  for (const char* strategy : {"[[2, 2]]", "[[2, 2], [], []]"}) {
    writeFile(tmp.path() + "/o.yaml", std::string("parallel: {device_num: 4}\ninputs:\n  - {name: l, shape: [8], dtype: int32}\n"
                                                  "ops:\n  - {name: h, type: OneHot, inputs: [l, 16, 1.0, 0.0], in_strategy: ") +
                                          strategy + "}\n");
    REQUIRE(runIrc({"o.yaml", "--dump-after", "step_parallel_begin", "-q"}, tmp.path()).exitCode == 0);
    std::string dump = readFile(tmp.path() + "/o_ir/rank_0/step_parallel_begin_0001.ir");
    CHECK(dump.find("primitive_attrs: {axis: -1, in_strategy: ((2, 2), (), ())}\n {in_strategy: ((2, 2), (), ())}") !=
          std::string::npos);
  }
  // A propagated OneHot prints the same form.
  writeFile(tmp.path() + "/p.yaml",
            "parallel: {device_num: 4}\ninputs:\n  - {name: l, shape: [8], dtype: int32}\n"
            "ops:\n  - {name: h, type: OneHot, inputs: [l, 16, 1.0, 0.0]}\n"
            "  - {name: r, type: ReLU, inputs: [h], in_strategy: [[4, 1]]}\n");
  REQUIRE(runIrc({"p.yaml", "--dump-after", "step_parallel_begin", "-q"}, tmp.path()).exitCode == 0);
  CHECK(readFile(tmp.path() + "/p_ir/rank_0/step_parallel_begin_0001.ir").find(" {in_strategy: ((4, 1), (), ())}") !=
        std::string::npos);
}

TEST_CASE("the report's ops[].inputs[i].value names the model value, through inserted ops") {
  // add2's input 0 arrives through matmul2's AllReduce and a StridedSlice.
  Compiled c = compileAllRanks(readFile(sourceDir() + "/examples/ffn.yaml"));
  REQUIRE(c.errors.empty());
  auto report = buildReport(c.global, c.options, 0);
  for (const auto& op : report["ops"])
    if (op["name"] == "add2") {
      CHECK(op["inputs"][0]["value"] == "matmul2");
      CHECK(op["inputs"][1]["value"] == "dense2.bias");
    }
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("training graphs: a _MirrorOperator before every op that reads a replicated parameter, and its gradient bytes") {
  std::string ffn = readFile(sourceDir() + "/examples/ffn.yaml");
  ffn.replace(ffn.find("  global_rank: 0"), 16, "  global_rank: 0\n  training: true");
  Compiled c = compileAllRanks(ffn);
  REQUIRE(c.errors.empty());
  CHECK(verifyCompiled(c).ok);  // the identity forward
  // dense1.weight as matmul reads it, (1, 4) on [2, 1, 4], is replicated over the dp axis:
  // ranks 0 and 4 hold the same slice. Its gradient AllReduce sends 2 (n - 1) / n of its
  // 64 x 16 float32 slice: 4096 bytes. The biases, (4) as add reads them: 2 x 16 x 4 x 1/2 = 64.
  auto report = buildReport(c.global, c.options, 0);
  REQUIRE(report["mirror_ops"].size() == 4);
  const auto& first = report["mirror_ops"][0];
  CHECK(first["name"] == "matmul.in1.mirror_op.0");
  CHECK(first["parameter"] == "dense1.weight");
  CHECK(first["attrs"]["group_ranks"].dump() == "[0,4]");
  CHECK(first["attrs"]["dev_num"] == 2);
  CHECK(first["attrs"]["mean_flag"] == true);
  CHECK(first["grad_comm_bytes_per_rank"] == 4096.0);
  CHECK(report["totals"]["grad_comm_bytes_per_rank"] == 4096.0 + 64 + 4096 + 64);
  CHECK(report["totals"]["comm_bytes_per_rank"] == 12288.0);  // the forward part alone, as before
  // Not a training graph: no mirrors.
  Compiled plain = compileAllRanks(readFile(sourceDir() + "/examples/ffn.yaml"));
  CHECK(buildReport(plain.global, plain.options, 0)["mirror_ops"].empty());
  TempDir tmp;
  writeFile(tmp.path() + "/t.yaml", ffn);
  RunResult r = runIrc({"t.yaml"}, tmp.path());
  CHECK(r.err.find("12288 bytes of forward communication, 8320 bytes of gradient AllReduce") != std::string::npos);
  RunResult e = runIrc({"explain", "t.yaml", "matmul.in1.mirror_op.0"}, tmp.path());
  CHECK(e.out.find("backward: AllReduce (mean) of the gradient, 4096 bytes sent per rank") != std::string::npos);
  // Under optimizer parallel the weight is held split over the two replicas and its gradient is
  // reduce-scattered onto them: half the AllReduce's bytes, and explain names the collective
  // (it said AllReduce before).
  std::string sharded = ffn;
  sharded.replace(sharded.find("  training: true"), 16,
                  "  training: true\n  enable_parallel_optimizer: true\n  parallel_optimizer_threshold: 0");
  writeFile(tmp.path() + "/s.yaml", sharded);
  RunResult se = runIrc({"explain", "s.yaml", "matmul.in1.mirror_op.0"}, tmp.path());
  CHECK(se.out.find("backward: ReduceScatter (mean) of the gradient, 2048 bytes sent per rank") != std::string::npos);
}

TEST_CASE("a split-vocabulary Gather is node 4 of its replace graph, .replace.0 to .7, then .forward_op.0") {
  TempDir tmp;
  REQUIRE(runIrc({sourceDir() + "/tests/models/vocab_split.yaml", "--dump-after", "step_parallel_end", "--dump-dir", tmp.path(),
                  "-q"})
              .exitCode == 0);
  std::string dump = readFile(tmp.path() + "/rank_0/step_parallel_end_0003.ir");
  const char* expected[] = {
      "(embed.replace.0) = Sub(",        "(embed.replace.1) = ReLU(",   "(embed.replace.2) = Minimum(",
      "(embed.replace.3) = Equal(",      "(embed.replace.4) = Gather(", "(embed.replace.5) = Cast(",
      "(embed.replace.6) = ExpandDims(", "(embed.replace.7) = Mul(",    "(embed.forward_op.0) = AllReduce("};
  size_t at = 0;
  for (const char* node : expected) {
    CAPTURE(node);
    size_t found = dump.find(node, at);
    CHECK(found != std::string::npos);
    at = found;
  }
  CHECK(dump.find("{instance name: replace_op_embed_4}") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

namespace {
std::vector<std::string> insertedOps(const Compiled& c) {
  std::vector<std::string> out;
  for (OpId id : c.global.order) {
    const Op& op = c.global.op(id);
    if (op.inserted() && op.type != "TupleGetItem" && op.type != "MakeTuple" && op.type != "Split" && op.type != "Concat")
      out.push_back(op.name + " = " + op.type);
  }
  return out;
}
}  // namespace

TEST_CASE(
    "ReshapeInfo in the MindSpore modes: the Reshape takes its producer's layout and redistributes to what its consumer needs") {
  // MindSpore's ReshapeInfo (spec §5 item 6): the input layout is the producer's, the output
  // layout the consumer's, and the redistribution between them is the Reshape's own. Merge: act
  // is batch-split 8 ways, head wants (32, 32) whole: the Reshape runs on act's slices (no gather
  // before it) and its result is gathered right after it, in every mode.
  std::string merge = readFile(sourceDir() + "/tests/models/reshape_info_merge.yaml");
  for (SearchMode mode :
       {SearchMode::ShardingPropagation, SearchMode::SemiAuto, SearchMode::DataParallel, SearchMode::FactorPropagation}) {
    CAPTURE(std::string(searchModeName(mode)));
    Compiled c = compileAllRanks(merge, mode);
    REQUIRE(c.errors.empty());
    CHECK(verifyCompiled(c).ok);
    CHECK(insertedOps(c) == std::vector<std::string>{"flat.forward_op.0 = AllGather"});
    const Op& flat = c.global.op(c.global.value(*c.global.findValue("flat")).producer);
    CHECK(flat.parallel->inputLayouts[0].sliceShape() == Shape{4, 8, 4});
    // The step estimate pays the Reshape's own AllGather (7 messages of 10 us and 7 x 512 bytes
    // at 10 GB/s; before, a conversion after an op was free).
    CHECK(estimateStepTime(c.global, c.options).total() >= 7 * 10e-6 + 7 * 512 * 1e-10);
  }

  // Split: act (8, 1) carries through the reshape onto dim 0; head wants dim 2 split 8 ways, which
  // the Reshape's own conversion after it makes: gathered whole, then each rank's slice.
  Compiled s = compileAllRanks(readFile(sourceDir() + "/tests/models/reshape_info_split.yaml"));
  REQUIRE(s.errors.empty());
  CHECK(verifyCompiled(s).ok);
  CHECK(insertedOps(s) == std::vector<std::string>{"unflat.forward_op.0 = AllGather", "unflat.forward_op.1 = StridedSlice"});
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("reason lines count device axes from the right, as tensor maps and outputs_partial do") {
  // ReduceSum over dim 1 with strategy (2, 4): device matrix (2, 4), the reduced dim on its last
  // axis, which counted from the right is axis 0, in outputs_partial and in the reason alike.
  TempDir tmp;
  writeFile(tmp.path() + "/m.yaml",
            "parallel: {device_num: 8}\ninputs:\n  - {name: x, shape: [8, 8], dtype: float32}\n"
            "ops:\n  - {name: y, type: ReduceSum, inputs: [x, [1]], in_strategy: [[2, 4]]}\n");
  REQUIRE(runIrc({"m.yaml", "--dump-after", "step_parallel_end", "-q"}, tmp.path()).exitCode == 0);
  std::string dump = readFile(tmp.path() + "/m_ir/rank_0/step_parallel_end_0003.ir");
  CHECK(dump.find("outputs_partial: (sum(0))") != std::string::npos);
  CHECK(dump.find("# reason: y splits a reduced dim 4 ways (device axis 0): the output is partial") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("strategy checkpoint under search_mode auto: its strategies are kept, the search chooses the rest") {
  // The operator-level search runs above the pipeline (search/operator_search.h) from where
  // strategy propagation begins: the checkpoint's strategies configured, every one of them (a
  // search keeps what is configured; no dry run, which would be a second search).
  TempDir tmp;
  std::string ffn = readFile(sourceDir() + "/examples/ffn.yaml");
  ffn.replace(ffn.find("  search_mode: sharding_propagation"), 35, "  search_mode: auto\n  strategy_ckpt_load: ck.json");
  writeFile(tmp.path() + "/ffn.yaml", ffn);
  writeFile(tmp.path() + "/ck.json", R"({"current_stage": 0, "parallel_strategy_item": {
    "add2": {"stage": 0, "parallel_strategy": [[8, 1], [1]]}}})");
  REQUIRE(runIrc({"ffn.yaml", "--dump-after", "step_parallel_begin", "-q"}, tmp.path()).exitCode == 0);
  std::string dump = readFile(tmp.path() + "/ffn_ir/rank_0/step_parallel_begin_0001.ir");
  size_t add2 = dump.find("{instance name: add2}");
  REQUIRE(add2 != std::string::npos);
  CHECK(dump.find("{in_strategy: ((8, 1), (1))}", add2) != std::string::npos);
  CHECK(dump.find("# strategy: user", add2) != std::string::npos);
  // matmul2, relu and add: the search's (matmul's strategy is the model's own).
  CHECK(checkLines(dump,
                   "CHECK: instance name: relu\nCHECK-NEXT: in_strategy\nCHECK-NEXT: # strategy: searched\n"
                   "CHECK: instance name: matmul2\nCHECK-NEXT: in_strategy\nCHECK-NEXT: # strategy: searched\n") == "");
}

TEST_CASE("strategy checkpoint: MindSpore's JSON out, and back in as fixed strategies: identical dumps") {
  TempDir tmp;
  std::string model = sourceDir() + "/examples/attention.yaml";
  REQUIRE(runIrc({model, "--strategy-ckpt-out", tmp.path() + "/ck.json", "--dump-all", "--dump-dir", tmp.path() + "/a", "-q"})
              .exitCode == 0);
  std::string ckpt = readFile(tmp.path() + "/ck.json");
  CHECK(ckpt.rfind("{\n  \"current_stage\": 0,\n  \"parallel_strategy_item\": {\n    \"q\": {\n      \"stage\": 0,", 0) == 0);
  CHECK(ckpt.find("\"parallel_layout_item\": {") != std::string::npos);
  CHECK(ckpt.find("\"opt_weight_shard_size\": 0") != std::string::npos);
  REQUIRE(runIrc({model, "--strategy-ckpt-in", tmp.path() + "/ck.json", "--dump-all", "--dump-dir", tmp.path() + "/b", "-q"})
              .exitCode == 0);
  RunResult diff = runIrc({"diff", tmp.path() + "/a", tmp.path() + "/b", "--stat"});
  CHECK(diff.out.find("strategies changed: 0\n  inserted ops: no change\n") != std::string::npos);
  // Out then in: byte-identical dumps (ops that get the checkpoint's strategy anyway stay as
  // they were, origin lines included).
  for (const std::string& f : listFiles(tmp.path() + "/a")) {
    CAPTURE(f);
    CHECK(readFile(tmp.path() + "/a/" + f) == readFile(tmp.path() + "/b/" + f));
  }
  // From the model: strategy_ckpt_load (relative to the model file) and ms_name keys.
  std::string ffn = readFile(sourceDir() + "/examples/ffn.yaml");
  ffn.replace(ffn.find("  global_rank: 0"), 16, "  global_rank: 0\n  strategy_ckpt_load: ck.json");
  ffn.replace(ffn.find("{name: add2,"), 12, "{name: add2, ms_name: Default/network/Add-op7,");
  writeFile(tmp.path() + "/ffn.yaml", ffn);
  writeFile(tmp.path() + "/ck.json", R"({"current_stage": 0, "parallel_strategy_item": {
    "Default/network/Add-op7": {"stage": 0, "parallel_strategy": [[8, 1], [1]]}}})");
  REQUIRE(runIrc({"ffn.yaml", "--dump-after", "step_parallel_begin", "-q"}, tmp.path()).exitCode == 0);
  CHECK(readFile(tmp.path() + "/ffn_ir/rank_0/step_parallel_begin_0001.ir").find(" {in_strategy: ((8, 1), (1))}") !=
        std::string::npos);
  // Bad checkpoints: located errors, exit 1.
  writeFile(tmp.path() + "/ck.json", "{\"parallel_strategy_item\": {\"nope\": {\"parallel_strategy\": [[1]]}}}");
  RunResult bad = runIrc({"ffn.yaml"}, tmp.path());
  CHECK(bad.exitCode == 1);
  CHECK(bad.err.find("ck.json:1:1: error: the checkpoint names 'nope', which is no op of the model") != std::string::npos);
  // Two unknown names: each reported once.
  writeFile(tmp.path() + "/ck.json",
            "{\"parallel_strategy_item\": {\"nope\": {\"parallel_strategy\": [[1]]}, \"nix\": {\"parallel_strategy\": [[1]]}}}");
  RunResult two = runIrc({"ffn.yaml"}, tmp.path());
  CHECK(two.exitCode == 1);
  size_t first = two.err.find("names 'nope'");
  REQUIRE(first != std::string::npos);
  CHECK(two.err.find("names 'nope'", first + 1) == std::string::npos);
  CHECK(two.err.find("names 'nix'") != std::string::npos);
  writeFile(tmp.path() + "/ck.json", "{\"parallel_strategy_item\": ");
  CHECK(runIrc({"ffn.yaml"}, tmp.path()).err.find("ck.json:1:") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("ReshapeInfo: a ReLU (4, 1, 1, 1) or (32, 1, 1, 1) on 32 devices, a Reshape to [32, 25088], a ReLU (1, 1)") {
  // MindSpore's held-out vector: the Reshape's input layout is the producer's slice ([8, 512, 7,
  // 7], or [1, ...]), not the whole tensor gathered before it; the consumer's replicated layout
  // comes from the Reshape's own AllGather after it.
  for (auto [split, slice] : {std::pair{4, 8}, std::pair{32, 1}}) {
    CAPTURE(split);
    Compiled c = compileAllRanks(
        "parallel: {device_num: 32, fully_use_devices: false}\n"
        "inputs:\n  - {name: x, shape: [32, 512, 7, 7], dtype: float32}\n"
        "ops:\n  - {name: relu1, type: ReLU, inputs: [x], in_strategy: [[" +
        std::to_string(split) +
        ", 1, 1, 1]]}\n"
        "  - {name: flat, type: Reshape, inputs: [relu1, [32, 25088]]}\n"
        "  - {name: relu2, type: ReLU, inputs: [flat], in_strategy: [[1, 1]]}\n");
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    CHECK(verifyCompiled(c).ok);
    const Op& flat = c.global.op(c.global.value(*c.global.findValue("flat")).producer);
    CHECK(flat.parallel->inputLayouts[0].sliceShape() == Shape{slice, 512, 7, 7});
    CHECK(insertedOps(c) == std::vector<std::string>{"flat.forward_op.0 = AllGather"});
  }
}

}  // namespace irc::test
