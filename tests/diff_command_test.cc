// `irc diff`: dumps matched by node name, strategy changes named, inserted communication shown.
#include <filesystem>

#include <doctest/doctest.h>

#include "dumps/ir_diff.h"
#include "tests/test_util.h"

namespace irc::test {
namespace {
std::string ffnModel() { return sourceDir() + "/examples/ffn.yaml"; }
}  // namespace

TEST_CASE("identical dump directories: no differences, status 0") {
  TempDir tmp;
  REQUIRE(runIrc({ffnModel(), "--dump-all", "--dump-dir", tmp.path() + "/a", "-q"}).exitCode == 0);
  RunResult r = runIrc({"diff", tmp.path() + "/a", tmp.path() + "/a"});
  CHECK(r.exitCode == 0);
  CHECK(r.out.find("no differences\n") != std::string::npos);
}

TEST_CASE("the optimal planner's FFN: the forward AllReduce and the slice become one ReduceScatter on the edge") {
  TempDir tmp;
  REQUIRE(runIrc({ffnModel(), "--dump-all", "--dump-dir", tmp.path() + "/a", "-q"}).exitCode == 0);
  REQUIRE(runIrc({ffnModel(), "--dump-all", "--dump-dir", tmp.path() + "/b", "-q", "--redistribution", "optimal"}).exitCode == 0);
  RunResult r = runIrc({"diff", tmp.path() + "/a", tmp.path() + "/b"});
  CHECK(r.exitCode == 1);
  CHECK(r.out.find("== step_parallel_end\n- matmul2.forward_op.0 = AllReduce(matmul2)") != std::string::npos);
  CHECK(r.out.find("~ add2.in0.redistribution_op.0: StridedSlice -> Split\n") != std::string::npos);
  CHECK(r.out.find("+ add2.in0.redistribution_op.2 = ReduceScatter(add2.in0.redistribution_op.1) {instance name: "
                   "redistribution_op_matmul2_add2_2ReduceScatter} primitive_attrs: {group: 4-6301172352641561019, group_ranks: "
                   "0-1-2-3, op: sum, rank_size: 4}") != std::string::npos);
}

TEST_CASE("two models: a strategy change is named as such, in every stage it shows") {
  TempDir tmp;
  std::string other = readFile(ffnModel());
  other.replace(other.find("in_strategy: [[2, 1], [1, 4]]"), 29, "in_strategy: [[8, 1], [1, 1]]");
  writeFile(tmp.path() + "/ffn_dp.yaml", other);
  RunResult r = runIrc({"diff", ffnModel(), tmp.path() + "/ffn_dp.yaml"});
  CHECK(r.exitCode == 1);
  CHECK(r.out.find("== step_parallel_begin\n") != std::string::npos);
  CHECK(r.out.find("strategy matmul: ((2, 1), (1, 4)) -> ((8, 1), (1, 1))\n") != std::string::npos);
  CHECK(r.out.find(
            "~ param x: <Tensor[Float32], (32, 64)>  # slice [0:32, 0:64] of (64, 64) -> <Tensor[Float32], (8, 64)>  # slice "
            "[0:8, 0:64] of (64, 64)\n") != std::string::npos);
  CHECK(runIrc({"diff", ffnModel(), tmp.path()}).exitCode == 2);  // a model and a directory
}

TEST_CASE("nodes are matched by name, so an inserted op does not shift every later line") {
  std::string a =
      "subgraph @g() {\n  %0(x1) = ReLU(%para1_x) {instance name: x1}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], "
      "(4)>)\n"
      "  %1(x2) = Neg(%0) {instance name: x2}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], (4)>)\n}\n";
  std::string b =
      "subgraph @g() {\n  %0(x1) = ReLU(%para1_x) {instance name: x1}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], "
      "(4)>)\n"
      "  %1(extra) = Abs(%0) {instance name: extra}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], (4)>)\n"
      "  %2(x2) = Neg(%0) {instance name: x2}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], (4)>)\n}\n";
  IrDiff d = diffIrText(a, b);
  REQUIRE(d.lines.size() == 1);
  CHECK(d.lines[0] == "+ extra = Abs(x1) {instance name: extra}");
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc diff leads with a summary: strategies once, inserted ops by type, totals with deltas") {
  TempDir tmp;
  std::string other = readFile(sourceDir() + "/examples/ffn.yaml");
  other.replace(other.find("in_strategy: [[2, 1], [1, 4]]"), 29, "in_strategy: [[8, 1], [1, 1]]");
  writeFile(tmp.path() + "/ffn_dp.yaml", other);
  std::string ffn = sourceDir() + "/examples/ffn.yaml";
  RunResult r = runIrc({"diff", ffn, tmp.path() + "/ffn_dp.yaml"});
  CHECK(r.exitCode == 1);
  // Pure data parallel: no AllReduce, no slice, every weight whole on every rank. Per rank the
  // tensor-parallel FFN held 64x16 slices of both weights and 16 of both biases: 8320 bytes;
  // data parallel holds them whole: 2 x 64 x 64 x 4 + 2 x 64 x 4 = 33280.
  CHECK(r.out.find("summary:\n  strategies changed: 5\n    matmul: ((2, 1), (1, 4)) -> ((8, 1), (1, 1))\n") != std::string::npos);
  CHECK(r.out.find("  inserted ops: -1 AllReduce, -1 StridedSlice\n") != std::string::npos);
  CHECK(r.out.find("  communication bytes per rank: 12288 -> 0 (-12288, -100.0%)\n") != std::string::npos);
  CHECK(r.out.find("  parameter bytes per rank: 8320 -> 33280 (+24960, +300.0%)\n") != std::string::npos);
  // Each difference once, at the first stage it shows.
  size_t first = r.out.find("strategy matmul: ((2, 1), (1, 4)) -> ((8, 1), (1, 1))");
  REQUIRE(first != std::string::npos);
  CHECK(r.out.find("strategy matmul: ((2, 1), (1, 4)) -> ((8, 1), (1, 1))", first + 1) == std::string::npos);
  RunResult all = runIrc({"diff", ffn, tmp.path() + "/ffn_dp.yaml", "--all-stages"});
  size_t a1 = all.out.find("strategy matmul:");
  CHECK(all.out.find("strategy matmul:", a1 + 1) != std::string::npos);

  RunResult stat = runIrc({"diff", ffn, tmp.path() + "/ffn_dp.yaml", "--stat"});
  CHECK(stat.exitCode == 1);
  CHECK(stat.out.find("== ") == std::string::npos);
  CHECK(stat.out.find("summary:") != std::string::npos);
  RunResult json = runIrc({"diff", ffn, tmp.path() + "/ffn_dp.yaml", "--json"});
  CHECK(json.exitCode == 1);
  CHECK(
      json.out.find("\"comm_bytes_per_rank\": {\n      \"before\": 12288.0,\n      \"after\": 0.0,\n      \"delta\": -12288.0,\n"
                    "      \"percent\": -100.0") != std::string::npos);
  CHECK(runIrc({"diff", ffn, ffn, "--stat"}).exitCode == 0);

  // The optimal planner's summary on the same model: -1 AllReduce -1 StridedSlice +1 ReduceScatter,
  // 12288 -> 6144 bytes (the Split and Concat are local).
  REQUIRE(runIrc({ffn, "--dump-all", "--dump-dir", tmp.path() + "/a", "-q"}).exitCode == 0);
  REQUIRE(runIrc({ffn, "--dump-all", "--dump-dir", tmp.path() + "/b", "-q", "--redistribution", "optimal"}).exitCode == 0);
  RunResult o = runIrc({"diff", tmp.path() + "/a", tmp.path() + "/b", "--stat"});
  CHECK(o.out.find("  inserted ops: +1 Concat, +1 ReduceScatter, +1 Split, -1 AllReduce, -1 StridedSlice\n") !=
        std::string::npos);
  CHECK(o.out.find("  communication bytes per rank: 12288 -> 6144 (-6144, -50.0%)\n") != std::string::npos);
  // Two single .ir files.
  RunResult files = runIrc({"diff", tmp.path() + "/a/rank_0/validate_0004.ir", tmp.path() + "/b/rank_0/validate_0004.ir"});
  CHECK(files.exitCode == 1);
  CHECK(files.out.find("== dump\n") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc diff --parallel holds irc's validate dump against MindSpore's own (seed 001's excerpt, 1.x and 2.x layouts)") {
  TempDir tmp;
  std::string ffn = sourceDir() + "/examples/ffn.yaml";
  REQUIRE(runIrc({ffn, "--dump-after", "validate", "--dump-dir", tmp.path() + "/irc", "-q"}).exitCode == 0);
  std::string ours = tmp.path() + "/irc/rank_0/validate_0004.ir";
  // Seed 001's validate excerpt, as MindSpore 1.x printed it (equivx / equiv[CNode]493 names,
  // Load side nodes, hash-numbered instance names, `...` lines): nothing differs.
  RunResult seed = runIrc({"diff", "--parallel", ours, sourceDir() + "/tests/data/mindspore/ffn_validate_excerpt_1x.ir"});
  CHECK(seed.exitCode == 0);
  CHECK(seed.out.find("no differences\n") != std::string::npos);
  // The same graph in 2.x's layout (strategy braces at the end of node lines, PrimFunc_,
  // UpdateState / Depend, I64(...) / Bool(...) values, scope comments).
  RunResult v2 = runIrc({"diff", "--parallel", ours, sourceDir() + "/tests/data/mindspore/ffn_validate_2x_style.ir"});
  CHECK(v2.exitCode == 0);
  // One strategy changed: that change, the strategies it moved, and the collectives.
  std::string dp = readFile(ffn);
  dp.replace(dp.find("in_strategy: [[2, 1], [1, 4]]"), 29, "in_strategy: [[8, 1], [1, 1]]");
  writeFile(tmp.path() + "/dp.yaml", dp);
  REQUIRE(runIrc({tmp.path() + "/dp.yaml", "--dump-after", "validate", "--dump-dir", tmp.path() + "/dp", "-q"}).exitCode == 0);
  RunResult changed = runIrc({"diff", "--parallel", tmp.path() + "/dp/rank_0/validate_0004.ir",
                              sourceDir() + "/tests/data/mindspore/ffn_validate_excerpt_1x.ir"});
  CHECK(changed.exitCode == 1);
  CHECK(changed.out.find("~ MatMul[matmul] ((8, 1), (1, 1)) -> (8, 64)\n    -> MatMul[matmul] ((2, 1), (1, 4)) -> (32, 16)\n") !=
        std::string::npos);
  CHECK(changed.out.find("+ AllReduce group 0-1-2-3, op sum -> (32, 64)\n") != std::string::npos);
  CHECK(changed.out.find("+ StridedSlice slice (0, 0), (32, 16), (1, 1) -> (32, 16)\n") != std::string::npos);
}

TEST_CASE("the dump reader survives malformed input: truncated lines, missing braces, huge lines, garbage") {
  TempDir tmp;
  std::string good = readFile(sourceDir() + "/tests/data/mindspore/ffn_validate_excerpt_1x.ir");
  std::vector<std::string> bad = {
      good.substr(0, good.size() / 2),                                                            // truncated mid-line
      "  %1(x) = MatMul(%0, %1 {instance name: matmul primitive_attrs: {in_strategy: ((2, 1)\n",  // missing braces
      "  %1(x) = " + std::string(100000, '(') + "\n      : (<Tensor[Float32], (" + std::string(50000, '9') + "\n",
      std::string("\x01\x02  %(\xff) = ) = (\n{in_strategy: (((\n      : -> (\n"), ""};
  for (size_t i = 0; i < bad.size(); ++i) {
    CAPTURE(i);
    writeFile(tmp.path() + "/bad.ir", bad[i]);
    RunResult r =
        runIrc({"diff", "--parallel", tmp.path() + "/bad.ir", sourceDir() + "/tests/data/mindspore/ffn_validate_excerpt_1x.ir"});
    CHECK((r.exitCode == 0 || r.exitCode == 1));
  }
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc import: a MindSpore begin dump (seed 001's excerpt) into a model whose own dumps match it") {
  TempDir tmp;
  std::string excerpt = sourceDir() + "/tests/data/mindspore/ffn_begin_excerpt_1x.ir";
  RunResult imp = runIrc({"import", excerpt, "-o", tmp.path() + "/ffn.yaml"});
  REQUIRE(imp.exitCode == 0);
  std::string model = readFile(tmp.path() + "/ffn.yaml");
  // matmul's operands are Loads outside the excerpt: inputs of the types its type line gives.
  // The only configured strategy uses 8 devices ((2, 1, 4)); the rest is left to propagation.
  // The model is written as every model irc writes (dumps/model_yaml_writer.h): attributes at
  // their defaults left out, plain names.
  CHECK(model.find("parallel: {device_num: 8, search_mode: sharding_propagation}") != std::string::npos);
  CHECK(model.find("  - {name: matmul, type: MatMul, inputs: [in1, in2], in_strategy: [[2, 1], [1, 4]]}\n") != std::string::npos);
  CHECK(model.find("  - {name: dense1.bias, shape: [64], dtype: float32}\n") != std::string::npos);
  CHECK(model.find("  - {name: matmul2, type: MatMul, inputs: [relu, dense2.weight]}\n") != std::string::npos);
  REQUIRE(
      runIrc({tmp.path() + "/ffn.yaml", "--dump-after", "step_parallel_begin", "--dump-dir", tmp.path() + "/d", "-q"}).exitCode ==
      0);
  RunResult d = runIrc({"diff", "--parallel", tmp.path() + "/d/rank_0/step_parallel_begin_0001.ir", excerpt});
  CHECK(d.exitCode == 0);
  CHECK(runIrc({"verify", tmp.path() + "/ffn.yaml"}).exitCode == 0);
  // irc's own parse dumps round-trip too: the same strategies after import.
  for (const char* example : {"attention", "embedding_layernorm", "reshape_transpose"}) {
    CAPTURE(example);
    std::string dir = tmp.path() + "/" + example;
    REQUIRE(runIrc({sourceDir() + "/examples/" + example + ".yaml", "--dump-after", "parse,step_parallel_begin", "--dump-dir",
                    dir, "-q"})
                .exitCode == 0);
    REQUIRE(runIrc({"import", dir + "/rank_0/parse_0000.ir", "-o", dir + ".yaml"}).exitCode == 0);
    REQUIRE(runIrc({dir + ".yaml", "--dump-after", "step_parallel_begin", "--dump-dir", dir + "_back", "-q"}).exitCode == 0);
    CHECK(runIrc({"diff", "--parallel", dir + "/rank_0/step_parallel_begin_0001.ir",
                  dir + "_back/rank_0/step_parallel_begin_0001.ir"})
              .exitCode == 0);
  }
}

TEST_CASE("irc import reads the dump into the IR: 2.x positional attributes, names made unique, bad values located") {
  TempDir tmp;
  // MindSpore 2.x passes MatMul's transpose flags as its last inputs; an input named like an op
  // instance keeps its name and the op takes the next free one.
  writeFile(tmp.path() + "/two.ir",
            "%para1_x: <Tensor[Float32], (8, 4)>\n%para2_w: <Ref[Tensor(F32)], (16, 4)> : has_default\n"
            "%para3_mm: <Tensor[Float32], (8, 16)>\n"
            "  %0(a) = PrimFunc_MatMul(%para1_x, %para2_w, Bool(0), Bool(1)) {instance name: mm} primitive_attrs: "
            "{in_strategy: ((2, 1), (4, 1))}\n      : (<Tensor[Float32], (8, 4)>, <Ref[Tensor(F32)], (16, 4)>) -> "
            "(<Tensor[Float32], (8, 16)>)\n"
            "  %1(b) = Add(%0, %para3_mm) {instance name: mm}\n"
            "  Return(%1)\n");
  RunResult two = runIrc({"import", tmp.path() + "/two.ir", "-o", tmp.path() + "/two.yaml"});
  REQUIRE_MESSAGE(two.exitCode == 0, two.err);
  std::string model = readFile(tmp.path() + "/two.yaml");
  CHECK(model.find("parallel: {device_num: 8, ") != std::string::npos);  // (2, 1) x (4, 1) uses 8 devices
  CHECK(
      model.find("  - {name: mm2, type: MatMul, inputs: [x, w], attrs: {transpose_b: true}, in_strategy: [[2, 1], [4, 1]]}\n") !=
      std::string::npos);
  CHECK(model.find("  - {name: mm3, type: Add, inputs: [mm2, mm]}\n") != std::string::npos);
  CHECK(model.find("outputs: [mm3]\n") != std::string::npos);
  CHECK(runIrc({"verify", tmp.path() + "/two.yaml"}).exitCode == 0);

  // Cast's dtype operand as dumps print it (Float16) is the model's float16 (a model that would
  // not load before: "operand 'dtype' of Cast 'half' 'Float16' is not known").
  std::string dir = tmp.path() + "/onehot_cast";
  REQUIRE(runIrc({sourceDir() + "/tests/models/onehot_cast.yaml", "--dump-after", "parse,step_parallel_begin", "--dump-dir", dir,
                  "-q"})
              .exitCode == 0);
  REQUIRE(runIrc({"import", dir + "/rank_0/parse_0000.ir", "-o", dir + ".yaml"}).exitCode == 0);
  CHECK(readFile(dir + ".yaml").find("  - {name: half, type: Cast, inputs: [x, float16], in_strategy: [[4, 1]]}\n") !=
        std::string::npos);
  REQUIRE(runIrc({dir + ".yaml", "--dump-after", "step_parallel_begin", "--dump-dir", dir + "_back", "-q"}).exitCode == 0);
  CHECK(runIrc(
            {"diff", "--parallel", dir + "/rank_0/step_parallel_begin_0001.ir", dir + "_back/rank_0/step_parallel_begin_0001.ir"})
            .exitCode == 0);

  // A value irc cannot read, and shapes that do not fit, are errors at the node, not a model that
  // fails when it is loaded.
  writeFile(tmp.path() + "/axis.ir",
            "%para1_x: <Tensor[Float32], (8, 4)>\n"
            "  %0(p) = Softmax(%para1_x) {instance name: p} primitive_attrs: {axis: banana}\n");
  RunResult axis = runIrc({"import", tmp.path() + "/axis.ir"});
  CHECK(axis.exitCode == 1);
  CHECK(axis.err.find(tmp.path() + "/axis.ir:2:3: error: %0 (Softmax): attribute axis is banana; expected an int") == 0);
  // An excerpt's undefined operand %1 becomes input in1 unless an op took that name.
  writeFile(tmp.path() + "/in.ir",
            "  %0(a) = ReLU(%1) {instance name: in1}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], (4)>)\n");
  RunResult in = runIrc({"import", tmp.path() + "/in.ir"});
  REQUIRE(in.exitCode == 0);
  CHECK(in.out.find("  - {name: in12, shape: [4], dtype: float32}\nops:\n  - {name: in1, type: ReLU, inputs: [in12]}\n") !=
        std::string::npos);

  // An excerpt's parameter w, read after an op named w: the parameter keeps its name.
  writeFile(tmp.path() + "/w.ir",
            "  %0(a) = ReLU(%1) {instance name: w}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], (4)>)\n"
            "  %2(b) = Add(%0, %para3_w) {instance name: b}\n"
            "      : (<Tensor[Float32], (4)>, <Ref[Tensor(F32)], (4)>) -> (<Tensor[Float32], (4)>)\n");
  RunResult w = runIrc({"import", tmp.path() + "/w.ir", "-o", tmp.path() + "/w.yaml"});
  REQUIRE(w.exitCode == 0);
  std::string wModel = readFile(tmp.path() + "/w.yaml");
  CHECK(wModel.find("  - {name: w, shape: [4], dtype: float32}\n") != std::string::npos);
  CHECK(wModel.find("  - {name: w2, type: ReLU, inputs: [in1]}\n  - {name: b, type: Add, inputs: [w2, w]}\n") !=
        std::string::npos);
  CHECK(runIrc({tmp.path() + "/w.yaml", "-q"}).exitCode == 0);

  // A name a model may not have (invalid UTF-8, a fuzz finding: the model writer threw) is
  // refused where the dump gives it.
  writeFile(tmp.path() + "/name.ir",
            "%para1_x\xff: <Tensor[Float32], (8, 4)>\n"
            "  %0(p) = ReLU(%para1_x\xff) {instance name: p}\n");
  RunResult name = runIrc({"import", tmp.path() + "/name.ir"});
  CHECK(name.exitCode == 1);
  CHECK(name.err.find(tmp.path() + "/name.ir:1:1: error: the name 'x\\xFF' is not valid UTF-8") == 0);
  writeFile(tmp.path() + "/shapes.ir",
            "%para1_x: <Tensor[Float32], (8, 4)>\n%para2_w: <Tensor[Float32], (8, 4)>\n"
            "  %0(y) = MatMul(%para1_x, %para2_w) {instance name: y}\n");
  RunResult shapes = runIrc({"import", tmp.path() + "/shapes.ir"});
  CHECK(shapes.exitCode == 1);
  CHECK(shapes.err.find(tmp.path() + "/shapes.ir:3:3: error: %0 (MatMul) 'y': ") == 0);
}

TEST_CASE("irc import: an op irc lacks and malformed dumps are located errors, never a crash") {
  TempDir tmp;
  writeFile(tmp.path() + "/foo.ir",
            "  %0(x) = ReLU(%para1_x) {instance name: r}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], (4)>)\n"
            "  %1(y) = FlashAttention(%0) {instance name: fa}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], (4)>)\n");
  RunResult foo = runIrc({"import", tmp.path() + "/foo.ir"});
  CHECK(foo.exitCode == 1);
  CHECK(foo.err.find("foo.ir:3:3: error: op %1 (FlashAttention) has no counterpart in irc's op set") != std::string::npos);
  std::string good = readFile(sourceDir() + "/tests/data/mindspore/ffn_begin_excerpt_1x.ir");
  std::vector<std::string> bad = {"",
                                  "...\n",
                                  good.substr(0, 150),
                                  "  %1(x) = MatMul(%0, %1 {instance name: matmul\n",
                                  "  %1(x) = Add(" + std::string(50000, '(') + "\n",
                                  std::string("  %\xff(\x01) = ) = (\n")};
  for (size_t i = 0; i < bad.size(); ++i) {
    CAPTURE(i);
    writeFile(tmp.path() + "/bad.ir", bad[i]);
    RunResult r = runIrc({"import", tmp.path() + "/bad.ir"});
    CHECK((r.exitCode == 0 || r.exitCode == 1));
    if (r.exitCode == 1) CHECK(r.err.find(tmp.path() + "/bad.ir:") == 0);
  }
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc diff of a model on 16,384 devices: a communication group of 16,384 ranks on one line, no crash") {
  // The Send scan was a std::regex, which recursed once per character of a line and overflowed
  // the stack (SIGSEGV) on the AllReduce's group_ranks line.
  TempDir tmp;
  writeFile(tmp.path() + "/m.yaml",
            "parallel: {device_num: 16384}\n"
            "inputs: [{name: x, shape: [16, 16384], dtype: float32}]\n"
            "parameters: [{name: w, shape: [16384, 16], dtype: float32}]\n"
            "ops:\n  - {name: mm, type: MatMul, inputs: [x, w], in_strategy: [[1, 16384], [16384, 1]]}\n");
  RunResult r = runIrc({"diff", tmp.path() + "/m.yaml", tmp.path() + "/m.yaml"});
  CHECK(r.exitCode == 0);
  CHECK(r.out.find("no differences\n") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc diff and import refuse what is no dump: a negative rank, a missing rank folder, garbage, a dump cut short") {
  TempDir tmp;
  const std::string a = tmp.path() + "/a", b = tmp.path() + "/b";
  REQUIRE(runIrc({ffnModel(), "--dump-all", "--dump-dir", a, "-q"}).exitCode == 0);
  REQUIRE(runIrc({ffnModel(), "--dump-all", "--dump-dir", b, "-q"}).exitCode == 0);
  // --rank -1 was an internal error on models (exit 4) and compared nothing on folders (exit 0).
  CHECK(runIrc({"diff", ffnModel(), ffnModel(), "--rank", "-1"}).exitCode == 2);
  CHECK(runIrc({"diff", a, b, "--rank", "-1"}).exitCode == 2);
  RunResult missing = runIrc({"diff", a, b, "--rank", "3"});
  CHECK(missing.exitCode == 1);
  CHECK(missing.err.find("has no folder rank_3") != std::string::npos);
  CHECK(runIrc({"diff", a, b}).exitCode == 0);
  // Two random files were "no differences"; a garbage .ir was read as an empty dump.
  std::string garbage(3000, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 7919 + 13) % 251);
  writeFile(tmp.path() + "/g1.bin", garbage);
  writeFile(tmp.path() + "/g2.bin", garbage.substr(1) + "x");
  RunResult random = runIrc({"diff", tmp.path() + "/g1.bin", tmp.path() + "/g2.bin"});
  CHECK(random.exitCode == 1);
  CHECK(random.err.find("g1.bin: not an .ir dump") != std::string::npos);
  // A garbage .onnx is a model that does not load (it was compared as a dump: exit 0).
  writeFile(tmp.path() + "/g.onnx", garbage);
  CHECK(runIrc({"diff", tmp.path() + "/g.onnx", ffnModel()}).exitCode == 1);
  // A dump cut in half: diff and import say so (import wrote a partial model).
  std::string whole = readFile(a + "/rank_0/step_parallel_begin_0001.ir");
  writeFile(tmp.path() + "/half.ir", whole.substr(0, whole.size() / 2));
  RunResult cut = runIrc({"diff", tmp.path() + "/half.ir", a + "/rank_0/step_parallel_begin_0001.ir"});
  CHECK(cut.exitCode == 1);
  CHECK(cut.err.find("half.ir: the dump of @ffn ends without its graph's Return(...) and closing '}': it was cut short") !=
        std::string::npos);
  RunResult imported = runIrc({"import", tmp.path() + "/half.ir", "-o", tmp.path() + "/half.yaml"});
  CHECK(imported.exitCode == 1);
  CHECK(imported.err.find(tmp.path() + "/half.ir:") == 0);
  CHECK(!std::filesystem::exists(tmp.path() + "/half.yaml"));
  // An empty folder holds no dump.
  std::filesystem::create_directories(tmp.path() + "/empty");
  CHECK(runIrc({"diff", tmp.path() + "/empty", a}).exitCode == 1);
}

}  // namespace irc::test
