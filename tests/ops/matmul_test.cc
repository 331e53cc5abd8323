// MatMul and BatchMatMul: MindSpore's device matrix [batch..., m, k, n], tensor maps, partial
// output and forward ops; the checks' exact diagnostics.
#include <doctest/doctest.h>

#include "ops/op_rule.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {
std::string mm(const std::string& strategy, const std::string& attrs = "", int devices = 8, const char* wShape = "[64, 64]") {
  return "parallel: {device_num: " + std::to_string(devices) +
         ", fully_use_devices: false}\n"
         "inputs:\n  - {name: x, shape: [64, 64], dtype: float32}\n  - {name: w, shape: " +
         wShape +
         ", dtype: float32}\n"
         "ops:\n  - {name: mm, type: MatMul, inputs: [x, w]" +
         attrs + ", in_strategy: " + strategy + "}\n";
}
}  // namespace

TEST_CASE("MatMul ((2, 1), (1, 4)) on 8 devices: dev [2, 1, 4], no partial") {
  OpFacts f = opFacts(mm("[[2, 1], [1, 4]]"), "mm");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 1, 4)");
  CHECK(f.inputMaps == std::vector<std::string>{"[2, 1]", "[1, 0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[2, 0]"});
  CHECK(f.inputSlices == std::vector<Shape>{{32, 64}, {64, 16}});
  CHECK(f.outputSlices == std::vector<Shape>{{32, 16}});
  CHECK(f.outputPartial == std::vector<std::vector<int>>{{}});
  CHECK(f.forward.empty());
}

TEST_CASE("MatMul ((2, 4), (4, 1)) on 8 devices: k split 4 ways, AllReduce(sum) over the k group") {
  OpFacts f = opFacts(mm("[[2, 4], [4, 1]]"), "mm");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 4, 1)");
  CHECK(f.inputMaps == std::vector<std::string>{"[2, 1]", "[1, 0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[2, 0]"});
  CHECK(f.outputSlices == std::vector<Shape>{{32, 64}});
  CHECK(f.outputPartial == std::vector<std::vector<int>>{{1}});
  CHECK(f.forward == std::vector<std::string>{"AllReduce sum over 0-1-2-3"});
}

TEST_CASE("MatMul with transpose_b swaps w's factors; out_strategy reduce-scatters") {
  OpFacts f = opFacts(mm("[[2, 2], [2, 2]]", ", attrs: {transpose_b: true}"), "mm");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 2, 2)");                                   // m, k, n
  CHECK(f.inputMaps == std::vector<std::string>{"[2, 1]", "[0, 1]"});  // w is [n, k]
  CHECK(f.forward == std::vector<std::string>{"AllReduce sum over 0-2"});
  OpFacts rs = opFacts(mm("[[2, 4], [4, 1]], out_strategy: [[8, 1]]"), "mm");
  REQUIRE(rs.errors == "");
  CHECK(rs.forward == std::vector<std::string>{"ReduceScatter sum over 0-1-2-3"});
}

TEST_CASE("MatMul checks: contracted splits must be equal; out_strategy must be ((m*k, n))") {
  OpFacts f = opFacts(mm("[[2, 2], [4, 1]]"), "mm");
  CHECK(f.errors ==
        "m.yaml:6:59: error: MatMul 'mm': dim 0 of 'w' is split 4 ways but dim 1 of 'x' is split 2 ways; they are the same dim "
        "of the op (factor k) and must be split alike\n"
        "  - {name: mm, type: MatMul, inputs: [x, w], in_strategy: [[2, 2], [4, 1]]}\n"
        "                                                          ^\n");
  OpFacts o = opFacts(mm("[[2, 4], [4, 1]], out_strategy: [[2, 1]]"), "mm");
  CHECK(o.errors.find(
            "MatMul 'mm': out_strategy must be (8, 1) (dim 0 split by m*k to reduce-scatter the partial sum); got (2, 1)") !=
        std::string::npos);
}

TEST_CASE("BatchMatMul with a split batch dim: dev [b, m, k, n]") {
  std::string yaml =
      "parallel: {device_num: 8}\ninputs:\n  - {name: a, shape: [4, 16, 32], dtype: float32}\n"
      "  - {name: b, shape: [4, 32, 8], dtype: float32}\nops:\n"
      "  - {name: bmm, type: BatchMatMul, inputs: [a, b], in_strategy: [[4, 2, 1], [4, 1, 1]]}\n";
  OpFacts f = opFacts(yaml, "bmm");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(4, 2, 1, 1)");
  CHECK(f.inputMaps == std::vector<std::string>{"[3, 2, 1]", "[3, 1, 0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[3, 2, 0]"});
  CHECK(f.outputSlices == std::vector<Shape>{{1, 8, 8}});
  OpFacts bad = opFacts(
      "parallel: {device_num: 8}\ninputs:\n  - {name: a, shape: [4, 16, 32], dtype: float32}\n"
      "  - {name: b, shape: [4, 32, 8], dtype: float32}\nops:\n"
      "  - {name: bmm, type: BatchMatMul, inputs: [a, b], in_strategy: [[4, 2, 1], [2, 1, 1]]}\n",
      "bmm");
  CHECK(bad.errors.find("BatchMatMul 'bmm': dim 0 of 'b' is split 2 ways but dim 0 of 'a' is split 4 ways") != std::string::npos);
}

TEST_CASE("rules: matmul family") {
  Graph g = compileAllRanks(mm("[[1, 1], [1, 1]]", "", 1)).original;
  CHECK(ruleOf(g, g.op(0))->print() == "([i, k], [k, j])->([i, j]) reduction={k}");
  Graph t = compileAllRanks(mm("[[1, 1], [1, 1]]", ", attrs: {transpose_a: true, transpose_b: true}", 1)).original;
  CHECK(ruleOf(t, t.op(0))->print() == "([k, i], [j, k])->([i, j]) reduction={k}");
}

}  // namespace irc::test
