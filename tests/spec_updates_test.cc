// The spec's changes of this round that are not a pass of their own: negative Transpose perms
// (ops.md), OneHot's strategy form (parallel-semantics.md §2) and the report's
// ops[].inputs[i].value (report.md).
#include <doctest/doctest.h>

#include "dumps/report.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace irc::test {

TEST_CASE("Transpose takes perm entries in [-rank, rank), counted from the end when negative") {
  std::string yaml = "parallel: {device_num: 4}\ninputs:\n  - {name: x, shape: [4, 8, 2], dtype: float32}\n"
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
  writeFile(tmp.path() + "/p.yaml", "parallel: {device_num: 4}\ninputs:\n  - {name: l, shape: [8], dtype: int32}\n"
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
  auto report = buildReport(c.global, 0);
  for (const auto& op : report["ops"])
    if (op["name"] == "add2") {
      CHECK(op["inputs"][0]["value"] == "matmul2");
      CHECK(op["inputs"][1]["value"] == "dense2.bias");
    }
}

}  // namespace irc::test
