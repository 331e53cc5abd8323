// Elementwise and broadcast ops: identity maps, broadcast dims unsplit, repeated calculation.
#include <doctest/doctest.h>

#include <limits>

#include "ops/op_rule.h"
#include "tests/approx.h"
#include "tests/ops/common.h"
#include "tests/pipeline_util.h"
#include "ops/op_defs.h"

namespace irc::test {

TEST_CASE("Add ((2, 4), (4)) on 8 devices: the bias takes the output's trailing axis") {
  OpFacts f =
      opFacts(oneOpModel(8, "  - {name: x, shape: [64, 64], dtype: float32}\n  - {name: b, shape: [64], dtype: float32}\n",
                         "{name: add, type: Add, inputs: [x, b], in_strategy: [[2, 4], [4]]}"),
              "add");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 4)");
  CHECK(f.inputMaps == std::vector<std::string>{"[1, 0]", "[0]"});
  CHECK(f.outputMaps == std::vector<std::string>{"[1, 0]"});
  CHECK(f.inputSlices == std::vector<Shape>{{32, 16}, {16}});
}

TEST_CASE("ReLU ((2, 1)) on 8 devices: repeated calculation appended on the right, map shifted") {
  OpFacts f = opFacts(oneOpModel(8, "  - {name: x, shape: [64, 64], dtype: float32}\n",
                                 "{name: r, type: ReLU, inputs: [x], in_strategy: [[2, 1]]}"),
                      "r");
  REQUIRE(f.errors == "");
  CHECK(f.devMatrix == "(2, 1, 4)");
  CHECK(f.inputMaps == std::vector<std::string>{"[2, 1]"});
  CHECK(f.outputSlices == std::vector<Shape>{{32, 64}});
}

TEST_CASE("a size-1 dim that broadcasts keeps -1 and cannot be split") {
  std::string in = "  - {name: x, shape: [64, 64], dtype: float32}\n  - {name: y, shape: [1, 64], dtype: float32}\n";
  OpFacts f = opFacts(oneOpModel(8, in, "{name: add, type: Add, inputs: [x, y], in_strategy: [[2, 4], [1, 4]]}"), "add");
  REQUIRE(f.errors == "");
  CHECK(f.inputMaps == std::vector<std::string>{"[1, 0]", "[-1, 0]"});
  OpFacts bad = opFacts(oneOpModel(8, in, "{name: add, type: Add, inputs: [x, y], in_strategy: [[2, 4], [2, 4]]}"), "add");
  CHECK(bad.errors.find("error: in_strategy of op 'add': 2 does not divide dim 0 of 'y' (size 1); valid: 1") !=
        std::string::npos);
  OpFacts unequal =
      opFacts(oneOpModel(8, "  - {name: x, shape: [64, 64], dtype: float32}\n  - {name: z, shape: [64, 64], dtype: float32}\n",
                         "{name: mul, type: Mul, inputs: [x, z], in_strategy: [[2, 4], [4, 2]]}"),
              "mul");
  CHECK(unequal.errors.find("Mul 'mul': dim 0 of 'z' is split 4 ways but dim 0 of 'x' is split 2 ways") != std::string::npos);
}

TEST_CASE("fully_use_devices rejects a configured strategy that uses some of the devices") {
  std::string yaml =
      "parallel: {device_num: 8, search_mode: sharding_propagation}\ninputs:\n  - {name: x, shape: [64, 64], dtype: float32}\n"
      "ops:\n  - {name: r, type: ReLU, inputs: [x], in_strategy: [[2, 1]]}\n";
  Compiled c = compileAllRanks(yaml);
  CHECK(
      c.errors.find("ReLU 'r': the strategy uses 2 of 8 devices; with fully_use_devices (the default) a configured strategy must "
                    "use all devices or one") != std::string::npos);
}

TEST_CASE("rules: elementwise family") {
  Graph g = compileAllRanks(
                oneOpModel(1, "  - {name: x, shape: [4, 1, 8], dtype: float32}\n  - {name: y, shape: [6, 1], dtype: float32}\n",
                           "{name: a, type: Add, inputs: [x, y]}"))
                .original;
  CHECK(ruleOf(g, g.op(0))->print() == "([i, 1, k], [j, 1])->([i, j, k])");
  Graph b =
      compileAllRanks(oneOpModel(1, "  - {name: x, shape: [4, 8], dtype: float32}\n  - {name: c, shape: [8], dtype: float32}\n",
                                 "{name: a, type: BiasAdd, inputs: [x, c]}"))
          .original;
  CHECK(ruleOf(b, b.op(0))->print() == "([i, j], [j])->([i, j])");
}

}  // namespace irc::test

namespace irc::test {

// Erf was added by docs/adding-an-op.md's recipe: a definition line with its kernel, this test,
// a line in docs/ops.md.
TEST_CASE("Erf: the Gauss error function, elementwise, verified under a split strategy") {
  const OpDef* def = findOpDef("Erf");
  REQUIRE(def != nullptr);
  CHECK(def->family == OpFamily::Unary);
  CHECK(def->unary(0.0) == 0.0);
  CHECK(def->unary(0.5) == relative(0.5204998778130465).epsilon(1e-15));
  CHECK(def->unary(-2.0) == relative(-0.9953222650189527).epsilon(1e-15));
  // The exact GeLU as exporters write it, split 2 x 4 on 8 devices.
  std::string yaml =
      "parallel: {device_num: 8}\ninputs:\n  - {name: x, shape: [16, 32], dtype: float32}\nops:\n"
      "  - {name: scaled, type: Mul, inputs: [x, 0.7071067811865476], in_strategy: [[2, 4]]}\n"
      "  - {name: erf, type: Erf, inputs: [scaled]}\n"
      "  - {name: one_plus, type: Add, inputs: [erf, 1.0]}\n"
      "  - {name: half_x, type: Mul, inputs: [x, 0.5]}\n"
      "  - {name: gelu, type: Mul, inputs: [half_x, one_plus]}\n"
      "outputs: [gelu]\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE(c.errors == "");
  CHECK(ruleOf(c.original, c.original.op(1))->print() == "([i, j])->([i, j])");
  VerifyResult r = verifyCompiled(c);
  CHECK(r.ok);
  CHECK(r.comparedValues > 0);
}

}  // namespace irc::test

namespace irc::test {

// IsNan, IsInf, Sign and Round joined the elementwise family, FloorMod and Mod the broadcast
// family, one entry each in their family's definitions (docs/adding-an-op.md).
TEST_CASE("IsNan, IsInf, Sign, Round, FloorMod, Mod: kernels, a Bool mask, and the IsNan/Select guard verified split") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const OpDef* isNan = findOpDef("IsNan");
  const OpDef* isInf = findOpDef("IsInf");
  REQUIRE(isNan != nullptr);
  REQUIRE(isInf != nullptr);
  CHECK(isNan->boolResult);
  CHECK(isNan->unary(nan) == 1.0);
  CHECK(isNan->unary(inf) == 0.0);
  CHECK(isInf->unary(-inf) == 1.0);
  CHECK(isInf->unary(nan) == 0.0);
  CHECK(findOpDef("Sign")->unary(-3.5) == -1.0);
  CHECK(findOpDef("Sign")->unary(0.0) == 0.0);
  // Half to even, as numpy.round and ONNX's Round.
  CHECK(findOpDef("Round")->unary(2.5) == 2.0);
  CHECK(findOpDef("Round")->unary(-1.5) == -2.0);
  // Python's % takes the divisor's sign, C's fmod the dividend's.
  CHECK(findOpDef("FloorMod")->binary(-7, 3) == 2.0);
  CHECK(findOpDef("Mod")->binary(-7, 3) == -1.0);
  // The exporters' softmax guard: scores where they are not NaN, else 0; split 2 x 4.
  std::string yaml =
      "parallel: {device_num: 8}\ninputs:\n  - {name: x, shape: [16, 32], dtype: float32}\nops:\n"
      "  - {name: scores, type: Softmax, inputs: [x], in_strategy: [[8, 1]]}\n"
      "  - {name: nan, type: IsNan, inputs: [scores]}\n"
      "  - {name: guarded, type: Select, inputs: [nan, 0.0, scores]}\n"
      "outputs: [guarded]\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE(c.errors == "");
  CHECK(c.original.value(c.original.op(1).results[0]).type.dtype == DType::Bool);
  CHECK(ruleOf(c.original, c.original.op(1))->print() == "([i, j])->([i, j])");
  VerifyResult r = verifyCompiled(c);
  CHECK(r.ok);
  CHECK(r.comparedValues > 0);
}

}  // namespace irc::test

namespace irc::test {

// ExactGeLU and SiLU joined the elementwise family by docs/adding-an-op.md's recipe: a
// definition line with its kernel, an ONNX line (Gelu without the tanh approximation), this test
// and a line in docs/ops.md; the import fuses the exporters' written-out forms into them.
TEST_CASE("ExactGeLU and SiLU: torch's GELU and SiLU, elementwise, verified under a split strategy") {
  const OpDef* gelu = findOpDef("ExactGeLU");
  const OpDef* silu = findOpDef("SiLU");
  REQUIRE(gelu != nullptr);
  REQUIRE(silu != nullptr);
  CHECK(gelu->family == OpFamily::Unary);
  CHECK(silu->family == OpFamily::Unary);
  // x Phi(x) = 0.5 x erfc(-x / sqrt 2) (Python: 0.5 * x * (1 + math.erf(x / math.sqrt(2)))).
  CHECK(gelu->unary(0.0) == 0.0);
  CHECK(gelu->unary(1.0) == relative(0.8413447460685429).epsilon(1e-15));
  CHECK(gelu->unary(-0.5) == relative(-0.15426876936299344).epsilon(1e-15));
  CHECK(gelu->unary(3.0) == relative(2.99595030590511).epsilon(1e-15));
  // Far below zero the product stays a tiny negative number, not 0 * inf or a cancelled 1 - 1.
  CHECK(gelu->unary(-10.0) == relative(-7.619853024160593e-23).epsilon(1e-12));
  // x / (1 + e^-x).
  CHECK(silu->unary(0.0) == 0.0);
  CHECK(silu->unary(1.0) == relative(0.7310585786300049).epsilon(1e-15));
  CHECK(silu->unary(-2.0) == relative(-0.2384058440442351).epsilon(1e-15));
  CHECK(silu->unary(-1000.0) == 0.0);
  std::string yaml =
      "parallel: {device_num: 8}\ninputs:\n  - {name: x, shape: [16, 32], dtype: float32}\nops:\n"
      "  - {name: g, type: ExactGeLU, inputs: [x], in_strategy: [[2, 4]]}\n"
      "  - {name: s, type: SiLU, inputs: [g]}\n"
      "outputs: [s]\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE(c.errors == "");
  CHECK(ruleOf(c.original, c.original.op(0))->print() == "([i, j])->([i, j])");
  VerifyResult r = verifyCompiled(c);
  CHECK(r.ok);
  CHECK(r.comparedValues > 0);
}

}  // namespace irc::test
