// The ops the ONNX frontend needed: Pow and Select (ONNX's Where) in YAML models, their shapes,
// reference and sharding; the integer RealDiv and number-literal dtypes they brought up.
#include <doctest/doctest.h>

#include "ir/reference_ops.h"
#include "passes/compile_options.h"
#include "tests/model_util.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {

const char* kInputs =
    "inputs:\n"
    "  - {name: mask, shape: [1, 8], dtype: bool}\n"
    "  - {name: x, shape: [8, 8], dtype: float32}\n"
    "  - {name: n, shape: [8], dtype: int32}\n";

TensorType typeOf(const Graph& g, const std::string& value) { return g.value(*g.findValue(value)).type; }

}  // namespace

TEST_CASE("Select: cond ? x : y with numpy broadcasting; cond must be bool") {
  Graph g = parseModel(model(std::string(kInputs) + "ops:\n  - {name: s, type: Select, inputs: [mask, x, -1.5]}\n"));
  CHECK(typeOf(g, "s") == TensorType{DType::Float32, {8, 8}});
  CHECK(modelErrors(model(std::string(kInputs) + "ops:\n  - {name: s, type: Select, inputs: [x, x, 0]}\n"))
            .find("Select's cond must be bool; got float32") != std::string::npos);
  const Op& op = g.op(g.order[0]);
  TensorValue mask{{1, 2}, {1, 0}}, x{{2, 2}, {1, 2, 3, 4}};
  auto out = evaluateOp(op, {&mask, &x, nullptr}, {{DType::Float32, {2, 2}}});
  CHECK(out[0].data == std::vector<double>{1, -1.5, 3, -1.5});
}

TEST_CASE("Pow: x ** y elementwise") {
  Graph g = parseModel(model(std::string(kInputs) + "ops:\n  - {name: p, type: Pow, inputs: [x, 2]}\n"));
  TensorValue x{{2}, {3, -2}};
  auto out = evaluateOp(g.op(g.order[0]), {&x, nullptr}, {{DType::Float32, {2}}});
  CHECK(out[0].data == std::vector<double>{9, 4});
}

TEST_CASE("integer RealDiv truncates toward zero; a number literal takes the tensor's dtype") {
  // Before: `RealDiv(n, 2)` was rejected (the literal was float32) and the reference gave 3.5.
  Graph g = parseModel(model(std::string(kInputs) + "ops:\n  - {name: h, type: RealDiv, inputs: [n, 2]}\n"));
  CHECK(typeOf(g, "h").dtype == DType::Int32);
  TensorValue n{{3}, {7, -7, 6}};
  auto out = evaluateOp(g.op(g.order[0]), {&n, nullptr}, {{DType::Int32, {3}}});
  CHECK(out[0].data == std::vector<double>{3, -3, 3});
}

TEST_CASE("data parallel splits the batch of Select's x where its mask broadcasts over it") {
  // Before: the mask's dim 0 (size 1) decided, and the whole op stayed replicated.
  Compiled c = compileAllRanks(model(std::string(kInputs) + "ops:\n  - {name: s, type: Select, inputs: [mask, x, 0]}\n", 4),
                               SearchMode::DataParallel);
  REQUIRE(c.errors.empty());
  const Op& s = c.global.op(c.global.order[0]);
  CHECK(s.parallel.inStrategy == ShardStrategy{{1, 1}, {4, 1}});
  CHECK(verifyCompiled(c).ok);
}

}  // namespace irc::test
