// Regressions from the robustness round (issue 11): each case failed (a wrong answer, a crash, a
// hang, a stale or partial dump) before its fix.
#include <doctest/doctest.h>

#include <filesystem>

#include <fmt/format.h>

#include "dumps/ir_diff.h"
#include "ir/names.h"
#include "ir/tensor_layout.h"
#include "tests/test_util.h"

namespace irc::test {
namespace fs = std::filesystem;
namespace {

std::string ffn() { return sourceDir() + "/examples/ffn.yaml"; }

// Writes `text` as DIR/NAME and compiles it with `args`.
RunResult compileText(const TempDir& tmp, const std::string& name, const std::string& text, std::vector<std::string> args = {}) {
  writeFile(tmp.path() + "/" + name, text);
  args.insert(args.begin(), name);
  return runIrc(args, tmp.path());
}

const char* kOneRelu = R"(name: one
parallel: {device_num: 4, device_matrix: [4], alias_name: [a]}
inputs:
  - {name: x, shape: [8, 8], dtype: float32}
ops:
  - {name: r, type: ReLU, inputs: [x]}
outputs: [r]
)";

}  // namespace

TEST_CASE("a partial tensor sharding is rejected where it would relabel a whole value") {
  TempDir tmp;
  std::string onInput = kOneRelu;
  onInput.replace(onInput.find("dtype: float32}"), 15, "dtype: float32, sharding: {sbp: [P]}}");
  RunResult r = compileText(tmp, "p.yaml", onInput);
  CHECK(r.exitCode == 1);
  CHECK(r.err.find("p.yaml:4:62: error: the sharding of 'x' declares a partial state over device axis 'a'") == 0);
  std::string onOutput = kOneRelu;
  onOutput.replace(onOutput.find("inputs: [x]}"), 12, "inputs: [x], sharding: {placements: [\"Partial()\"]}}");
  RunResult o = compileText(tmp, "o.yaml", onOutput);
  CHECK(o.exitCode == 1);
  // An op's result may stay partial (DTensor's Partial(), Shardy's unreduced) only as the op
  // computes it: a ReLU makes no partial sums.
  CHECK(o.err.find("o.yaml:6:50: error: the sharding constraint on r keeps it partial, [Partial(sum)]; r computes it as "
                   "[Replicate()]") == 0);
  std::string paddle = kOneRelu;
  paddle.replace(paddle.find("dtype: float32}"), 15, "dtype: float32, sharding: {dims_mapping: [-1, -1], partial: [0]}}");
  CHECK(compileText(tmp, "d.yaml", paddle).exitCode == 1);
}

TEST_CASE("verify: equal infinities and NaN against NaN agree, and the tolerance is printed") {
  TempDir tmp;
  // Log(ReLU(-|x|)) is Log(0) = -inf everywhere, on one device and on every rank alike.
  writeFile(tmp.path() + "/inf.yaml", R"(name: inf
parallel: {device_num: 2}
inputs:
  - {name: x, shape: [4], dtype: float32}
ops:
  - {name: a, type: Abs, inputs: [x]}
  - {name: n, type: Neg, inputs: [a]}
  - {name: r, type: ReLU, inputs: [n]}
  - {name: l, type: Log, inputs: [r], in_strategy: [[2]]}
  - {name: m, type: Neg, inputs: [l]}
  - {name: z, type: Mul, inputs: [l, 0.0]}
outputs: [l, m, z]
)");
  RunResult r = runIrc({"verify", "inf.yaml"}, tmp.path());
  CHECK(r.exitCode == 0);
  CHECK(r.out.find("all 2 ranks agree") != std::string::npos);
  CHECK(r.out.find("equal infinities and NaN against NaN agree") != std::string::npos);
}

TEST_CASE("the optimal planner handles a scalar partial value (no dim to scatter)") {
  TempDir tmp;
  writeFile(tmp.path() + "/s.yaml", R"(name: s
parallel: {device_num: 4, redistribution: optimal}
inputs:
  - {name: x, shape: [8], dtype: float32}
ops:
  - {name: s, type: ReduceSum, inputs: [x, []], in_strategy: [[4]]}
  - {name: r, type: ReLU, inputs: [s]}
outputs: [r]
)");
  CHECK(runIrc({"s.yaml", "--dump-all", "-q"}, tmp.path()).exitCode == 0);
  CHECK(runIrc({"verify", "s.yaml"}, tmp.path()).exitCode == 0);
}

TEST_CASE("products of user numbers past int64 are located errors, never wrap-around") {
  TempDir tmp;
  std::string mesh = kOneRelu;
  mesh.replace(mesh.find("{device_num: 4, device_matrix: [4], alias_name: [a]}"), 52,
               "{device_num: 8, device_matrix: [2305843009213693953, 8], alias_name: [a, b]}");
  RunResult m = compileText(tmp, "m.yaml", mesh);
  CHECK(m.exitCode == 1);
  CHECK(m.err.find("m.yaml:2:42: error: device_matrix (2305843009213693953, 8): the product of its entries does not fit") == 0);

  std::string shape = kOneRelu;
  shape.replace(shape.find("[8, 8]"), 6, "[4294967296, 4294967296, 4294967296]");
  RunResult s = compileText(tmp, "s.yaml", shape);
  CHECK(s.exitCode == 1);
  CHECK(s.err.find("has more than 72057594037927936 elements") != std::string::npos);

  std::string strategy = kOneRelu;
  strategy.replace(strategy.find("inputs: [x]}"), 12, "inputs: [x], in_strategy: [[4294967296, 4294967296]]}");
  RunResult st = compileText(tmp, "st.yaml", strategy);
  CHECK(st.exitCode == 1);
  CHECK(st.err.find("error:") != std::string::npos);

  std::string reshape = kOneRelu;
  reshape.replace(reshape.find("{name: r, type: ReLU, inputs: [x]}"), 34,
                  "{name: r, type: Reshape, inputs: [x, [4294967296, 4294967296, 0]]}");
  RunResult rs = compileText(tmp, "rs.yaml", reshape);
  CHECK(rs.exitCode == 1);
  CHECK(rs.err.find("rs.yaml:") == 0);

  CHECK(runIrc({"layout", "--device-matrix", "4294967296,4294967296", "--tensor-map-index", "1,0"}).exitCode == 1);
  CHECK(runIrc({"layout", "--strategy", "4294967296,4294967296,4294967296"}).exitCode == 1);
}

TEST_CASE("irc diff reads dump lines of any length (no regex recursion)") {
  std::string longName(30000, 'n');
  std::string a = "subgraph @g() {\n  %0(" + longName + ") = ReLU(%para1_x) {instance name: " + longName +
                  "}\n      : (<Tensor[Float32], (4)>) -> (<Tensor[Float32], (4)>)\n  Return(%0)\n}\n";
  std::string b = a;
  b.replace(b.find("ReLU"), 4, "Tanh");
  IrDiff same = diffIrText(a, a);
  CHECK(same.empty());
  IrDiff d = diffIrText(a, b);
  REQUIRE(d.lines.size() == 1);
  CHECK(d.lines[0].find("~ " + longName) == 0);
}

TEST_CASE("divisors of a huge dim come from its factorization, and only a handful are listed") {
  // (Its time is the benchmarks' to watch: a unit test on a loaded 2-core runner bounds results, not seconds.)
  CHECK(divisorsText(72057594037927931) == "1, 72057594037927931");
  CHECK(divisorsText(48) == "1, 2, 3, 4, 6, 8, 12, 16, 24, 48");
  CHECK(divisorsText(int64_t{1} << 40) == "1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, ... (41 divisors in all), 1099511627776");
  RunResult big = runIrc({"layout", "--device-matrix", "32768,32768", "--tensor-map-index", "1,0"});
  CHECK(big.exitCode == 1);
  CHECK(big.err.find("--max-ranks") != std::string::npos);
  CHECK(runIrc({"layout", "--device-matrix", "8192", "--tensor-map-index", "0", "--max-ranks", "8192", "--json"}).exitCode == 0);
}

TEST_CASE("work is bounded: Split's output_num and --all-ranks past the limit are refused") {
  TempDir tmp;
  std::string split = kOneRelu;
  split.replace(split.find("{name: r, type: ReLU, inputs: [x]}"), 34,
                "{name: r, type: Split, inputs: [x], attrs: {axis: 0, output_num: 2147483648}}");
  split.replace(split.find("outputs: [r]"), 12, "outputs: [r:0]");
  RunResult s = compileText(tmp, "split.yaml", split);
  CHECK(s.exitCode == 1);
  CHECK(s.err.find("split.yaml:6:") == 0);
  CHECK(s.err.find(": error: Split 'r': output_num must be in 1 .. 4096 (docs/limits.md); got 2147483648\n") !=
        std::string::npos);

  std::string many = kOneRelu;
  many.replace(many.find("{device_num: 4, device_matrix: [4], alias_name: [a]}"), 52, "{device_num: 1048576}");
  RunResult a = compileText(tmp, "many.yaml", many, {"--all-ranks", "--dump-all"});
  CHECK(a.exitCode == 2);
  CHECK(a.err.find("--all-ranks would write 1048576 rank folders; the limit is 4096") != std::string::npos);
  CHECK(!fs::exists(tmp.path() + "/many_ir"));
  CHECK(runIrc({"verify", "many.yaml"}, tmp.path()).exitCode == 2);
  CHECK(compileText(tmp, "many.yaml", many, {"--dump-all", "-q"}).exitCode == 0);  // rank 0 alone is fine

  // verify refuses a program too large to simulate instead of allocating it (found by the fuzzer).
  RunResult huge = runIrc({"verify", sourceDir() + "/tests/fuzz_corpus/verify_huge_tensor.yaml"});
  CHECK(huge.exitCode == 1);
  CHECK(huge.err.find("verify simulates at most 268435456 (docs/limits.md)") != std::string::npos);
}

TEST_CASE("valid models that used to be internal errors: Squeeze of a split dim, Gather on a split axis 1") {
  TempDir tmp;
  writeFile(tmp.path() + "/sq.yaml", R"(name: sq
parallel: {device_num: 2}
inputs:
  - {name: x, shape: [2, 1, 4], dtype: float32}
ops:
  - {name: s, type: Squeeze, inputs: [x], in_strategy: [[2, 1, 1]]}
)");
  CHECK(runIrc({"verify", "sq.yaml"}, tmp.path()).exitCode == 0);
  RunResult dump = runIrc({"sq.yaml", "--dump-after", "validate", "-q"}, tmp.path());
  REQUIRE(dump.exitCode == 0);
  CHECK(readFile(tmp.path() + "/sq_ir/rank_0/validate_0004.ir").find("primitive_attrs: {axis: (1), in_strategy: ((2, 1, 1))}") !=
        std::string::npos);
  // Nothing to squeeze globally, but a dim split down to size 1 on the rank: the rank's op is the
  // identity (found by the fuzzer).
  CHECK(runIrc({"verify", sourceDir() + "/tests/fuzz_corpus/squeeze_nothing_split.yaml"}).exitCode == 0);

  writeFile(tmp.path() + "/g.yaml", R"(name: g
parallel: {device_num: 2}
inputs:
  - {name: t, shape: [4, 6], dtype: float32}
  - {name: i, shape: [3], dtype: int32}
ops:
  - {name: g, type: Gather, inputs: [t, i, 1], in_strategy: [[1, 2], [1]]}
)");
  RunResult g = runIrc({"g.yaml"}, tmp.path());
  CHECK(g.exitCode == 1);
  CHECK(g.err.find("g.yaml:7:61: error: Gather 'g' cannot split dim 1 of 't'") == 0);
  std::string propagated = readFile(tmp.path() + "/g.yaml");
  propagated.replace(propagated.find("in_strategy: [[1, 2], [1]]"), 26, "in_strategy: [[2, 1], [1]]");
  writeFile(tmp.path() + "/g2.yaml", propagated);
  CHECK(runIrc({"verify", "g2.yaml"}, tmp.path()).exitCode == 0);
}

TEST_CASE("names: invalid UTF-8 and control characters are located errors; the exact name beats op:index") {
  TempDir tmp;
  std::string utf = kOneRelu;
  utf.replace(utf.find("{name: r,"), 9, "{name: \"r\xff\",");
  RunResult u = compileText(tmp, "u.yaml", utf, {"--report", "r.json"});
  CHECK(u.exitCode == 1);
  CHECK(u.err.find("u.yaml:6:12: error: op name 'r\\xFF' is not valid UTF-8 (byte 0xFF at byte 1)") == 0);
  CHECK(!fs::exists(tmp.path() + "/r.json"));

  std::string ctl = kOneRelu;
  ctl.replace(ctl.find("{name: r,"), 9, "{name: \"r\\n  %9(evil) = Boom()\",");
  RunResult c = compileText(tmp, "c.yaml", ctl);
  CHECK(c.exitCode == 1);
  CHECK(c.err.find("contains a control character (U+000A) at byte 1") != std::string::npos);
  CHECK(nameProblem("ok.name:0/x") == std::nullopt);
  CHECK(nameProblem(std::string("a\0b", 3)).has_value());
  CHECK(nameProblem("\xc3\xa9t\xc3\xa9") == std::nullopt);  // UTF-8 is fine
  CHECK(nameProblem("\xed\xa0\x80").has_value());           // a surrogate is not

  writeFile(tmp.path() + "/amb.yaml", R"(name: amb
parallel: {device_num: 1}
inputs:
  - {name: "a:0", shape: [4], dtype: float32}
  - {name: y, shape: [4], dtype: float32}
ops:
  - {name: a, type: Neg, inputs: [y]}
  - {name: r, type: ReLU, inputs: ["a:0"]}
outputs: [r]
)");
  REQUIRE(runIrc({"amb.yaml", "--dump-after", "parse", "-q"}, tmp.path()).exitCode == 0);
  CHECK(readFile(tmp.path() + "/amb_ir/rank_0/parse_0000.ir").find("= ReLU(%para1_a:0)") != std::string::npos);
}

TEST_CASE("model files: one YAML document, never a directory or an endless device; empty files are located") {
  TempDir tmp;
  RunResult two = compileText(tmp, "two.yaml", std::string(kOneRelu) + "---\ngarbage: 1\n");
  CHECK(two.exitCode == 1);
  CHECK(two.err.find("two.yaml:8:1: error: the file holds 2 YAML documents") == 0);
  for (const char* text : {"", "# only a comment\n", "\r\r\r"}) {
    RunResult e = compileText(tmp, "e.yaml", text);
    CHECK(e.exitCode == 1);
    CHECK(e.err.find("e.yaml:1:1: error: ") == 0);
  }
  // yaml-cpp loops forever on a NUL byte (found by the fuzzer): control bytes are refused first.
  RunResult nul = compileText(tmp, "nul.yaml", std::string("name: a\nparallel: {device_num: \0 1}\n", 36));
  CHECK(nul.exitCode == 1);
  CHECK(nul.err.find("nul.yaml:2:24: error: the file contains the control byte 0x00") == 0);
  // yaml-cpp 0.7 emits events forever on some malformed flow collections (found by the fuzzer).
  RunResult runaway = runIrc({sourceDir() + "/tests/fuzz_corpus/yaml_cpp_runaway_flow.yaml"});
  CHECK(runaway.exitCode == 1);
  CHECK(runaway.err.find("yaml_cpp_runaway_flow.yaml:2:1: error: invalid YAML: the parser makes no progress here") !=
        std::string::npos);
  RunResult dir = runIrc({tmp.path()});
  CHECK(dir.exitCode == 1);
  CHECK(dir.err.find("it is a directory") != std::string::npos);
  RunResult zero = runIrc({"/dev/zero"});
  CHECK(zero.exitCode == 1);
  CHECK(zero.err.find("it is larger than 268435456 bytes") != std::string::npos);
}

TEST_CASE("a run replaces its rank folder whole; a failed run leaves the previous dumps") {
  TempDir tmp;
  std::string out = tmp.path() + "/out";
  REQUIRE(runIrc({ffn(), "--dump-all", "--dump-dir", out, "-q"}).exitCode == 0);
  REQUIRE(runIrc({ffn(), "--dump-after", "validate", "--dump-dir", out, "-q"}).exitCode == 0);
  CHECK(listFiles(out) == std::vector<std::string>{"rank_0/validate_0004.ir"});  // no stale file survives

  std::string broken = readFile(ffn());
  broken.replace(broken.find("type: ReLU"), 10, "type: Relu");
  writeFile(tmp.path() + "/broken.yaml", broken);
  CHECK(runIrc({tmp.path() + "/broken.yaml", "--dump-all", "--dump-dir", out, "-q"}).exitCode == 1);
  CHECK(listFiles(out) == std::vector<std::string>{"rank_0/validate_0004.ir"});

  // A write that fails part way (a file size limit standing in for a full disk): exit 1 with the
  // system's reason, the previous folder intact, no staging folder left behind.
  RunResult full = runShell("trap '' XFSZ; ulimit -f 1; \"$IRC\" " + ffn() + " --dump-all --dump-dir " + out + " -q", tmp.path());
  CHECK(full.exitCode == 1);
  CHECK(full.err.find(fmt::format("irc: error: cannot write '{}/rank_0/parse_0000.ir': File too large", out)) == 0);
  CHECK(listFiles(out) == std::vector<std::string>{"rank_0/validate_0004.ir"});
  for (const auto& e : fs::directory_iterator(out)) CHECK(e.path().filename().string() == "rank_0");
}

TEST_CASE("concurrent runs into one folder never splice their files") {
  TempDir tmp;
  std::string other = readFile(ffn());
  other.replace(other.find("name: ffn"), 9, "name: other");
  writeFile(tmp.path() + "/other.yaml", other);
  std::string script =
      "for i in 1 2 3 4 5 6; do\n"
      "  \"$IRC\" " +
      ffn() +
      " --dump-all --dump-dir out -q & \"$IRC\" other.yaml --dump-all --dump-dir out -q &\n"
      "  wait\n"
      "  a=$(grep -l '@ffn' out/rank_0/*.ir | wc -l); b=$(grep -l '@other' out/rank_0/*.ir | wc -l)\n"
      "  n=$(ls out/rank_0 | wc -l)\n"
      "  if [ \"$n\" != 5 ] || { [ \"$a\" != 0 ] && [ \"$b\" != 0 ]; }; then echo \"spliced: $a ffn, $b other, $n files\"; fi\n"
      "done\nls -a out\n";
  RunResult r = runShell(script, tmp.path());
  CHECK(r.exitCode == 0);
  CHECK(r.out == ".\n..\nrank_0\n");
  CHECK(r.err.empty());
}

TEST_CASE("write errors carry the real reason; a full stdout is a failure") {
  TempDir tmp;
  fs::create_directories(tmp.path() + "/dir");
  RunResult d = runIrc({ffn(), "--report", tmp.path() + "/dir", "-q"});
  CHECK(d.exitCode == 1);
  CHECK(d.err == fmt::format("irc: error: cannot write '{}/dir': Is a directory\n", tmp.path()));
  for (std::string cmd :
       {"\"$IRC\" " + ffn() + " --report - -q", std::string("\"$IRC\" layout --device-matrix 2,4 --tensor-map-index 1,0"),
        "\"$IRC\" explain " + ffn() + " add"}) {
    RunResult full = runShell(cmd + " > /dev/full");
    CAPTURE(cmd);
    CHECK(full.exitCode == 1);
    CHECK(full.err.find("irc: error: cannot write to standard output: No space left on device") != std::string::npos);
  }
}

TEST_CASE("irc layout: a parenthesised --tensor-map entry is one dim on several axes") {
  RunResult r =
      runIrc({"layout", "--device-matrix", "4,3", "--alias", "ax0,ax1", "--tensor-map", "(ax1,ax0)", "--shape", "24", "--json"});
  CHECK(r.exitCode == 0);
  CHECK(r.out.find("\"tensor_map\":[[0,1]]") != std::string::npos);
  RunResult idx = runIrc({"layout", "--device-matrix", "4,3", "--tensor-map-index", "(0,1)", "--shape", "24", "--json"});
  CHECK(idx.exitCode == 0);
  CHECK(idx.out.find("\"tensor_map\":[[0,1]]") != std::string::npos);
  CHECK(runIrc({"layout", "--device-matrix", "2,4", "--alias", "dp,mp", "--tensor-map", "[dp,None]", "--json"}).exitCode == 0);
}

}  // namespace irc::test
