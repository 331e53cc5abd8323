// Shape and dtype inference, one TEST_CASE per op family, through the frontend (which is how
// models reach it) plus direct calls for the inserted communication ops.
#include <doctest/doctest.h>

#include "ops/op_defs.h"
#include "ops/shape_inference.h"
#include "tests/model_util.h"

namespace irc::test {
namespace {

TensorType typeOf(const Graph& g, const std::string& value) { return g.value(*g.findValue(value)).type; }

std::string oneOp(const std::string& inputs, const std::string& op) {
  return model("inputs:\n" + inputs + "ops:\n  - " + op + "\n");
}

const char* kXAndW = "  - {name: x, shape: [8, 16], dtype: float32}\n  - {name: w, shape: [16, 4], dtype: float32}\n";

}  // namespace

TEST_CASE("matmul: plain and transposed operands") {
  Graph g = parseModel(oneOp(kXAndW, "{name: y, type: MatMul, inputs: [x, w]}"));
  CHECK(typeOf(g, "y") == TensorType{DType::Float32, {8, 4}});
  Graph t = parseModel(oneOp("  - {name: x, shape: [16, 8], dtype: float32}\n  - {name: w, shape: [4, 16], dtype: float32}\n",
                             "{name: y, type: MatMul, inputs: [x, w], attrs: {transpose_a: true, transpose_b: true}}"));
  CHECK(typeOf(t, "y").shape == Shape{8, 4});
  CHECK(modelErrors(oneOp(kXAndW, "{name: y, type: MatMul, inputs: [w, x]}"))
            .find("contracted dims differ: x (16, 4) contracts 4, w (8, 16) contracts 8") != std::string::npos);
}

TEST_CASE("batch matmul broadcasts batch dims") {
  Graph g =
      parseModel(oneOp("  - {name: a, shape: [2, 1, 8, 16], dtype: float32}\n  - {name: b, shape: [3, 16, 4], dtype: float32}\n",
                       "{name: y, type: BatchMatMul, inputs: [a, b]}"));
  CHECK(typeOf(g, "y").shape == Shape{2, 3, 8, 4});
}

TEST_CASE("elementwise binary ops broadcast; Equal gives Bool") {
  const char* in = "  - {name: a, shape: [8, 1, 4], dtype: float32}\n  - {name: b, shape: [6, 1], dtype: float32}\n";
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: Add, inputs: [a, b]}")), "y").shape == Shape{8, 6, 4});
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: Equal, inputs: [a, b]}")), "y").dtype == DType::Bool);
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: Mul, inputs: [a, 0.5]}")), "y").shape == Shape{8, 1, 4});
  CHECK(modelErrors(oneOp("  - {name: a, shape: [8, 4], dtype: float32}\n  - {name: b, shape: [8, 4], dtype: int32}\n",
                          "{name: y, type: Sub, inputs: [a, b]}"))
            .find("Sub operands have different dtypes: float32 and int32") != std::string::npos);
}

TEST_CASE("bias add, unary and cast") {
  Graph g = parseModel(
      oneOp("  - {name: x, shape: [4, 8, 2], dtype: float16}\n  - {name: b, shape: [8], dtype: float16}\n",
            "{name: y, type: BiasAdd, inputs: [x, b]}\n  - {name: z, type: Sigmoid, inputs: [y]}\n"
            "  - {name: c, type: Cast, inputs: [z, float32]}\n  - {name: d, type: Cast, inputs: [z], attrs: {dtype: int8}}"));
  CHECK(typeOf(g, "y") == TensorType{DType::Float16, {4, 8, 2}});
  CHECK(typeOf(g, "c").dtype == DType::Float32);
  CHECK(typeOf(g, "d").dtype == DType::Int8);
}

TEST_CASE("reductions: axis int, tuple, all; keep_dims") {
  const char* in = "  - {name: x, shape: [2, 3, 4], dtype: float32}\n";
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: ReduceSum, inputs: [x, 1]}")), "y").shape == Shape{2, 4});
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: ReduceMean, inputs: [x, [0, -1]], attrs: {keep_dims: true}}")), "y").shape ==
        Shape{1, 3, 1});
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: ReduceMax, inputs: [x]}")), "y").shape == Shape{});
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: ReduceMin, inputs: [x], attrs: {axis: 2}}")), "y").shape == Shape{2, 3});
  CHECK(modelErrors(oneOp(in, "{name: y, type: ReduceSum, inputs: [x, 3]}"))
            .find("axis 3 is out of range for rank 3 (valid: -3 .. 2)") != std::string::npos);
}

TEST_CASE("reshape with -1, transpose, expand dims, squeeze") {
  const char* in = "  - {name: x, shape: [2, 3, 4], dtype: float32}\n";
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: Reshape, inputs: [x, [-1, 4]]}")), "y").shape == Shape{6, 4});
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: Transpose, inputs: [x, [2, 0, 1]]}")), "y").shape == Shape{4, 2, 3});
  CHECK(typeOf(parseModel(oneOp(in, "{name: y, type: ExpandDims, inputs: [x, -1]}")), "y").shape == Shape{2, 3, 4, 1});
  const char* ones = "  - {name: x, shape: [1, 3, 1], dtype: float32}\n";
  CHECK(typeOf(parseModel(oneOp(ones, "{name: y, type: Squeeze, inputs: [x]}")), "y").shape == Shape{3});
  CHECK(typeOf(parseModel(oneOp(ones, "{name: y, type: Squeeze, inputs: [x], attrs: {axis: [0]}}")), "y").shape == Shape{3, 1});
  CHECK(modelErrors(oneOp(in, "{name: y, type: Transpose, inputs: [x, [0, 0, 1]]}"))
            .find("perm (0, 0, 1) is not a permutation of 0 .. 2") != std::string::npos);
  CHECK(modelErrors(oneOp(in, "{name: y, type: Reshape, inputs: [x, [5, 5]]}"))
            .find("cannot reshape (2, 3, 4) (24 elements) to (5, 5) (25 elements)") != std::string::npos);
}

TEST_CASE("gather: output is indices dims in place of the axis") {
  Graph g = parseModel(oneOp("  - {name: t, shape: [100, 8], dtype: float32}\n  - {name: i, shape: [4, 5], dtype: int64}\n",
                             "{name: y, type: Gather, inputs: [t, i]}\n  - {name: z, type: Gather, inputs: [t, i, 1]}"));
  CHECK(typeOf(g, "y").shape == Shape{4, 5, 8});
  CHECK(typeOf(g, "z").shape == Shape{100, 4, 5});
  CHECK(modelErrors(oneOp("  - {name: t, shape: [100, 8], dtype: float32}\n  - {name: i, shape: [4], dtype: float32}\n",
                          "{name: y, type: Gather, inputs: [t, i]}"))
            .find("Gather's indices must have an integer dtype; got float32") != std::string::npos);
}

TEST_CASE("concat and split") {
  const char* in = "  - {name: a, shape: [4, 2], dtype: float32}\n  - {name: b, shape: [4, 6], dtype: float32}\n";
  Graph g = parseModel(oneOp(in,
                             "{name: c, type: Concat, inputs: [a, b], attrs: {axis: 1}}\n"
                             "  - {name: s, type: Split, inputs: [c], attrs: {axis: 1, output_num: 4}}"));
  CHECK(typeOf(g, "c").shape == Shape{4, 8});
  CHECK(g.op(g.value(*g.findValue("s")).producer).results.size() == 4);
  CHECK(typeOf(g, "s:3").shape == Shape{4, 2});
  CHECK(modelErrors(oneOp(in, "{name: c, type: Concat, inputs: [a, b]}"))
            .find("Concat input 1 has shape (4, 6); it must equal (4, 2) except on axis 0") != std::string::npos);
  CHECK(modelErrors(oneOp(in, "{name: s, type: Split, inputs: [b], attrs: {axis: 1, output_num: 4}}"))
            .find("output_num 4 does not divide dim 1 of shape (4, 6) (size 6)") != std::string::npos);
}

TEST_CASE("layer norm has three outputs; cross entropy two") {
  Graph g =
      parseModel(oneOp("  - {name: x, shape: [2, 3, 8], dtype: float32}\n  - {name: g, shape: [3, 8], dtype: float32}\n"
                       "  - {name: b, shape: [3, 8], dtype: float32}\n",
                       "{name: ln, type: LayerNorm, inputs: [x, g, b], attrs: {begin_norm_axis: 1, begin_params_axis: 1}}"));
  CHECK(typeOf(g, "ln:0").shape == Shape{2, 3, 8});
  CHECK(typeOf(g, "ln:1").shape == Shape{2, 1, 1});
  CHECK(typeOf(g, "ln:2").shape == Shape{2, 1, 1});
  Graph s = parseModel(oneOp("  - {name: l, shape: [4, 10], dtype: float32}\n  - {name: y, shape: [4, 10], dtype: float32}\n",
                             "{name: ce, type: SoftmaxCrossEntropyWithLogits, inputs: [l, y]}"));
  CHECK(typeOf(s, "ce").shape == Shape{4});
  CHECK(typeOf(s, "ce:1").shape == Shape{4, 10});
}

TEST_CASE("one hot inserts the depth dim and takes on_value's dtype") {
  Graph g = parseModel(oneOp("  - {name: i, shape: [4], dtype: int32}\n",
                             "{name: y, type: OneHot, inputs: [i, 10, 1.0, 0.0]}\n"
                             "  - {name: z, type: OneHot, inputs: [i, 10, 1, 0], attrs: {axis: 0}}"));
  CHECK(typeOf(g, "y") == TensorType{DType::Float32, {4, 10}});
  CHECK(typeOf(g, "z").shape == Shape{10, 4});
}

TEST_CASE("inserted communication ops: shape arithmetic") {
  TensorType x{DType::Float32, {8, 12}};
  AttrMap attrs{{"group", std::string("g")}, {"group_ranks", std::string("0-1")}, {"rank_size", int64_t{4}}};
  auto gathered = inferResultTypes(*findOpDef("AllGather"), {{&x, nullptr}}, attrs);
  CHECK(std::get<std::vector<TensorType>>(gathered)[0].shape == Shape{32, 12});
  auto scattered = inferResultTypes(*findOpDef("ReduceScatter"), {{&x, nullptr}}, attrs);
  CHECK(std::get<std::vector<TensorType>>(scattered)[0].shape == Shape{2, 12});
  AttrMap a2a{{"split_count", int64_t{4}}, {"split_dim", int64_t{1}}, {"concat_dim", int64_t{0}}};
  auto moved = inferResultTypes(*findOpDef("AlltoAll"), {{&x, nullptr}}, a2a);
  CHECK(std::get<std::vector<TensorType>>(moved)[0].shape == Shape{32, 3});
  Attribute begin = IntTuple{0, 4}, end = IntTuple{8, 8}, strides = IntTuple{1, 1};
  auto sliced =
      inferResultTypes(*findOpDef("StridedSlice"), {{&x, nullptr}, {nullptr, &begin}, {nullptr, &end}, {nullptr, &strides}}, {});
  CHECK(std::get<std::vector<TensorType>>(sliced)[0].shape == Shape{8, 4});
}

}  // namespace irc::test
