// The ops the ONNX frontend needed: Pow and Select (ONNX's Where) in YAML models, their shapes,
// reference and sharding; the integer RealDiv and number-literal dtypes they brought up.
#include <doctest/doctest.h>

#include "ops/reference_ops.h"
#include "passes/manager/compile_options.h"
#include "tests/approx.h"
#include "tests/model_util.h"
#include "tests/pipeline_util.h"
#include "ops/op_sharding.h"

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
  CHECK(strategyOf(s) == ShardStrategy{{1, 1}, {4, 1}});
  CHECK(verifyCompiled(c).ok);
}

TEST_CASE("Slice: a window per dim; the dims it cuts are whole on every rank") {
  const char* body =
      "inputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n"
      "ops:\n  - {name: s, type: Slice, inputs: [x, [0, 4], [8, 8]], in_strategy: [[4, 1]]}\n"
      "  - {name: r, type: ReLU, inputs: [s]}\n";
  Graph g = parseModel(model(body, 4));
  CHECK(typeOf(g, "s").shape == Shape{8, 8});
  CHECK(modelErrors(model("inputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n"
                          "ops:\n  - {name: s, type: Slice, inputs: [x, [0, 12], [8, 8]]}\n"))
            .find("dim 1: [12, 12 + 8) does not fit in size 16") != std::string::npos);
  TensorValue x{{2, 3}, {1, 2, 3, 4, 5, 6}};
  Graph small =
      parseModel(model("inputs:\n  - {name: x, shape: [2, 3], dtype: float32}\n"
                       "ops:\n  - {name: s, type: Slice, inputs: [x, [1, 1], [1, 2]]}\n"));
  CHECK(evaluateOp(small.op(small.order[0]), {&x, nullptr, nullptr}, {{DType::Float32, {1, 2}}})[0].data ==
        std::vector<double>{5, 6});
  // Splitting the dim it cuts is refused; splitting the dim it keeps whole is verified.
  Compiled refused =
      compileAllRanks(model("inputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n"
                            "ops:\n  - {name: s, type: Slice, inputs: [x, [0, 4], [8, 8]], in_strategy: [[1, 4]]}\n",
                            4));
  CAPTURE(refused.errors);
  CHECK(refused.errors.find("a dim it slices a window from") != std::string::npos);
  Compiled c = compileAllRanks(model(body, 4));
  REQUIRE(c.errors.empty());
  CHECK(verifyCompiled(c).ok);
}

TEST_CASE("BroadcastTo: numpy broadcasting to a shape; the broadcast dims may be split") {
  const char* body =
      "inputs:\n  - {name: x, shape: [1, 8], dtype: float32}\n"
      "ops:\n  - {name: b, type: BroadcastTo, inputs: [x, [4, 8]], in_strategy: [[1, 4]]}\n"
      "  - {name: e, type: Exp, inputs: [b], in_strategy: [[4, 1]]}\n";
  Graph g = parseModel(model(body, 4));
  CHECK(typeOf(g, "b").shape == Shape{4, 8});
  CHECK(modelErrors(model("inputs:\n  - {name: x, shape: [2, 8], dtype: float32}\n"
                          "ops:\n  - {name: b, type: BroadcastTo, inputs: [x, [4, 8]]}\n"))
            .find("x of shape (2, 8) does not broadcast to (4, 8)") != std::string::npos);
  TensorValue x{{1, 2}, {1, 2}};
  auto out = evaluateOp(g.op(g.order[0]), {&x, nullptr}, {{DType::Float32, {2, 2}}});
  CHECK(out[0].data == std::vector<double>{1, 2, 1, 2});
  Compiled c = compileAllRanks(model(body, 4));
  REQUIRE(c.errors.empty());
  CHECK(verifyCompiled(c).ok);
  // A rank builds its slice of the broadcast: the local shape is its block.
  for (const auto& [rank, local] : c.locals)
    for (OpId id : local.order)
      if (local.op(id).type == "BroadcastTo") CHECK(std::get<IntTuple>(*local.op(id).operands[1].constant) == IntTuple{4, 2});
}

TEST_CASE("comparisons and logical ops give Bool; Softplus does not overflow; a mask built from them verifies") {
  const char* body =
      "inputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n  - {name: y, shape: [8, 16], dtype: float32}\n"
      "ops:\n  - {name: lt, type: Less, inputs: [x, y], in_strategy: [[2, 2], [2, 2]]}\n"
      "  - {name: ge, type: GreaterEqual, inputs: [x, 0.5]}\n"
      "  - {name: both, type: LogicalAnd, inputs: [lt, ge]}\n"
      "  - {name: nb, type: LogicalNot, inputs: [both]}\n"
      "  - {name: sp, type: Softplus, inputs: [x]}\n"
      "  - {name: sel, type: Select, inputs: [nb, sp, y]}\n";
  Graph g = parseModel(model(body, 4));
  CHECK(typeOf(g, "lt").dtype == DType::Bool);
  CHECK(typeOf(g, "nb").dtype == DType::Bool);
  CHECK(typeOf(g, "sp").dtype == DType::Float32);
  TensorValue big{{3}, {1000, -1000, 0}};
  Graph sp =
      parseModel(model("inputs:\n  - {name: x, shape: [3], dtype: float32}\n"
                       "ops:\n  - {name: s, type: Softplus, inputs: [x]}\n"));
  auto out = evaluateOp(sp.op(sp.order[0]), {&big}, {{DType::Float32, {3}}})[0].data;
  CHECK(out[0] == relative(1000));
  CHECK(out[1] == relative(0).epsilon(1e-12));
  CHECK(out[2] == relative(0.69314718055994531));
  Compiled c = compileAllRanks(model(body, 4));
  REQUIRE(c.errors.empty());
  CHECK(verifyCompiled(c).ok);
}

TEST_CASE("Triu and Tril keep a triangle of the last two dims, which must be whole; the batch dims may be split") {
  const char* body =
      "inputs:\n  - {name: x, shape: [4, 3, 3], dtype: float32}\n"
      "ops:\n  - {name: u, type: Triu, inputs: [x], attrs: {diagonal: 1}, in_strategy: [[4, 1, 1]]}\n"
      "  - {name: l, type: Tril, inputs: [u], attrs: {diagonal: -1}}\n";
  Graph g = parseModel(model(body, 4));
  CHECK(typeOf(g, "u").shape == Shape{4, 3, 3});
  TensorValue x{{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  Graph small =
      parseModel(model("inputs:\n  - {name: x, shape: [3, 3], dtype: float32}\n"
                       "ops:\n  - {name: u, type: Triu, inputs: [x], attrs: {diagonal: 1}}\n"
                       "  - {name: l, type: Tril, inputs: [x]}\n"));
  CHECK(evaluateOp(small.op(small.order[0]), {&x}, {{DType::Float32, {3, 3}}})[0].data ==
        std::vector<double>{0, 2, 3, 0, 0, 6, 0, 0, 0});
  CHECK(evaluateOp(small.op(small.order[1]), {&x}, {{DType::Float32, {3, 3}}})[0].data ==
        std::vector<double>{1, 0, 0, 4, 5, 0, 7, 8, 9});
  Compiled refused =
      compileAllRanks(model("inputs:\n  - {name: x, shape: [4, 4], dtype: float32}\n"
                            "ops:\n  - {name: u, type: Triu, inputs: [x], in_strategy: [[1, 4]]}\n",
                            4));
  CHECK(refused.errors.find("one of the two dims its triangle is taken over") != std::string::npos);
  Compiled c = compileAllRanks(model(body, 4));
  REQUIRE(c.errors.empty());
  CHECK(verifyCompiled(c).ok);
}

}  // namespace irc::test
