// The printer: MindSpore's node and type forms, sorted attrs, tuples, multi-output ops and
// several graph outputs.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "dumps/ir_printer.h"
#include "tests/check_lines.h"
#include "tests/model_util.h"

namespace irc::test {

TEST_CASE("tensor and tuple types print as MindSpore does") {
  CHECK(formatTensorType({DType::Float32, {4}}) == "<Tensor[Float32], (4)>");
  CHECK(formatTensorType({DType::BFloat16, {}}) == "<Tensor[BFloat16], ()>");
  CHECK(formatTupleType({{DType::Float32, {8, 16}}, {DType::Float32, {8, 1}}, {DType::Int32, {4}}}) ==
        "<Tuple[Tensor[Float32]*2,Tensor[Int32]], TupleShape((8, 16), (8, 1), (4))>");
  CHECK(formatStrategy({{2, 1}, {4}}) == "((2, 1), (4))");
  CHECK(formatConstantType(Attribute(IntTuple{3})) == "<Tuple[Int64]>");
  CHECK(formatConstantType(Attribute(IntTuple{})) == "<Tuple[]>");
  CHECK(formatAttribute(Attribute(ScalarTensor{DType::Float32, 4})) == "Tensor(shape=[], dtype=Float32, value=4)");
  CHECK(formatAttribute(Attribute(1e-7)) == "1e-07");
}

TEST_CASE("numbers: integral values without a fraction below 1e15, the shortest round trip otherwise") {
  CHECK(formatNumber(4096) == "4096");
  CHECK(formatNumber(-3) == "-3");
  CHECK(formatNumber(-0.0) == "0");
  CHECK(formatNumber(999999999999999.0) == "999999999999999");
  CHECK(formatNumber(1e15) == fmt::format("{}", 1e15));
  CHECK(formatNumber(0.5) == "0.5");
  CHECK(formatNumber(1e-7) == "1e-07");
  CHECK(formatNumber(INFINITY) == "inf");
  CHECK(formatNumber(std::nan("")) == "nan");
}

TEST_CASE("every kind of attribute and constant type, appended after what is there") {
  auto appended = [](const Attribute& a) {
    std::string out = "x=";
    appendAttribute(out, a);
    out += " : ";
    appendConstantType(out, a);
    return out;
  };
  CHECK(appended(true) == "x=true : <Bool>");
  CHECK(appended(int64_t{-9223372036854775807 - 1}) == "x=-9223372036854775808 : <Int64>");
  CHECK(appended(0.5) == "x=0.5 : <Float32>");
  CHECK(appended(std::string("sum")) == "x=sum : <String>");
  CHECK(appended(IntTuple{0, -1, 64}) == "x=(0, -1, 64) : <Tuple[Int64*3]>");
  CHECK(appended(IntTuple{7}) == "x=(7) : <Tuple[Int64]>");
  CHECK(appended(IntTuple{}) == "x=() : <Tuple[]>");
  CHECK(appended(DType::Float16) == "x=Float16 : <TypeType>");
  CHECK(appended(ScalarTensor{DType::Int32, 2.5}) == "x=Tensor(shape=[], dtype=Int32, value=2.5) : <Tensor[Int32], ()>");
}

TEST_CASE("primitive attrs are sorted, defaults included, strategies of configured ops among them") {
  Graph g = parseModel(
      model("inputs:\n  - {name: x, shape: [8, 8], dtype: float32}\nops:\n"
            "  - {name: mm, type: MatMul, inputs: [x, x], attrs: {transpose_b: true}, in_strategy: [[2, 1], [4, 1]]}\n"));
  std::string text = printGraph(g, {});
  CHECK(checkLines(text, R"(
    CHECK: %0(mm) = MatMul(%para1_x, %para1_x) {instance name: mm} primitive_attrs: {in_strategy: ((2, 1), (4, 1)), transpose_a: false, transpose_b: true}
    CHECK-NEXT:       : (<Tensor[Float32], (8, 8)>, <Tensor[Float32], (8, 8)>) -> (<Tensor[Float32], (8, 8)>)
    CHECK-NEXT: Return(%0)
  )") == "");
}

TEST_CASE("header: attrs sorted, inputs then parameters numbered from 1") {
  auto [g, settings, gData, gFacts] = parseModelAndSettings(
      "name: h\nparallel: {device_num: 4, global_rank: 2, device_matrix: [2, 2], alias_name: [dp, mp]}\n"
      "inputs:\n  - {name: x, shape: [4], dtype: int64}\nparameters:\n  - {name: p, shape: [4], dtype: int64}\n"
      "ops:\n  - {name: y, type: Add, inputs: [x, p]}\n");
  PrintOptions options;
  options.settings = &settings;  // the graph holds no settings: the model's block reaches the printer beside it
  options.rank = 3;
  std::string text = printGraph(g, options);
  CHECK(text.rfind("# IR entry: @h\n# Total subgraphs: 1\n\n# Attrs:\nalias_name: (dp, mp)\ndevice_matrix: (2, 2)\n"
                   "device_num: 4\nglobal_rank: 3\nsearch_mode: sharding_propagation\n\n# Total params: 2\n# Params:\n"
                   "%para1_x: <Tensor[Int64], (4)>\n%para2_p: <Tensor[Int64], (4)> : has_default\n\n"
                   "subgraph attr:\nsubgraph instance: h\nsubgraph @h() {\n",
                   0) == 0);
}

TEST_CASE("multi-output ops read through TupleGetItem; several outputs return through MakeTuple") {
  Graph g =
      parseModel(model("inputs:\n  - {name: x, shape: [4, 8], dtype: float32}\nops:\n"
                       "  - {name: s, type: Split, inputs: [x], attrs: {axis: 1, output_num: 2}}\n"
                       "  - {name: c, type: Concat, inputs: [\"s:1\", \"s:0\"], attrs: {axis: 0}}\n"
                       "outputs: [c, \"s:1\"]\n"));
  std::string text = printGraph(g, {});
  CHECK(checkLines(text, R"(
    CHECK: %0(s) = Split(%para1_x) {instance name: s} primitive_attrs: {axis: 1, output_num: 2}
    CHECK-NEXT: : (<Tensor[Float32], (4, 8)>) -> (<Tuple[Tensor[Float32]*2], TupleShape((4, 4), (4, 4))>)
    CHECK-NEXT: %1(s.getitem.0) = TupleGetItem(%0, 0)
    CHECK-NEXT: : (<Tuple[Tensor[Float32]*2], TupleShape((4, 4), (4, 4))>, <Int64>) -> (<Tensor[Float32], (4, 4)>)
    CHECK-NEXT: %2(s.getitem.1) = TupleGetItem(%0, 1)
    CHECK: %3(c.make_tuple) = MakeTuple(%2, %1)
    CHECK: %4(c) = Concat(%3) {instance name: c} primitive_attrs: {axis: 0}
    CHECK-NEXT: : (<Tuple[Tensor[Float32]*2], TupleShape((4, 4), (4, 4))>) -> (<Tensor[Float32], (8, 4)>)
    CHECK-NEXT: %5(return.make_tuple) = MakeTuple(%4, %2)
    CHECK-NEXT: : (<Tensor[Float32], (8, 4)>, <Tensor[Float32], (4, 4)>) -> (<Tuple[Tensor[Float32]*2], TupleShape((8, 4), (4, 4))>)
    CHECK-NEXT: Return(%5)
    CHECK-NEXT: : (<Tuple[Tensor[Float32]*2], TupleShape((8, 4), (4, 4))>)
    CHECK-NEXT: }
  )") == "");
}

TEST_CASE("constant operands print as values with their types") {
  Graph g =
      parseModel(model("inputs:\n  - {name: x, shape: [2, 8], dtype: float32}\nops:\n"
                       "  - {name: r, type: Reshape, inputs: [x, [16]]}\n"
                       "  - {name: c, type: Cast, inputs: [r, float16]}\n"
                       "  - {name: s, type: ReduceSum, inputs: [x]}\n"
                       "outputs: [c, s]\n"));
  std::string text = printGraph(g, {});
  CHECK(checkLines(text, R"(
    CHECK: = Reshape(%para1_x, (16)) {instance name: r}
    CHECK-NEXT: : (<Tensor[Float32], (2, 8)>, <Tuple[Int64]>) -> (<Tensor[Float32], (16)>)
    CHECK: = Cast(%0, Float16) {instance name: c}
    CHECK-NEXT: : (<Tensor[Float32], (16)>, <TypeType>) -> (<Tensor[Float16], (16)>)
    CHECK: = ReduceSum(%para1_x, ()) {instance name: s} primitive_attrs: {keep_dims: false}
    CHECK-NEXT: : (<Tensor[Float32], (2, 8)>, <Tuple[]>) -> (<Tensor[Float32], ()>)
  )") == "");
}

TEST_CASE("the same graph prints the same bytes") {
  std::string m = model("inputs:\n  - {name: x, shape: [4, 4], dtype: float32}\nops:\n  - {name: y, type: Exp, inputs: [x]}\n");
  CHECK(printGraph(parseModel(m), {}) == printGraph(parseModel(m), {}));
}

TEST_CASE("a dump streamed in blocks is the text printed whole") {
  // 12000 ops print over 1 MiB, so the streamed dump is written in several blocks.
  std::string m = model("inputs:\n  - {name: x0, shape: [4, 4], dtype: float32}\nops:\n");
  for (int i = 1; i <= 12000; ++i) m += fmt::format("  - {{name: x{}, type: Exp, inputs: [x{}]}}\n", i, i - 1);
  Graph g = parseModel(m);
  std::string whole = printGraph(g, {});
  REQUIRE(whole.size() > (size_t{1} << 20));
  std::ostringstream streamed;
  printGraph(g, {}, streamed);
  CHECK(streamed.str() == whole);
}

}  // namespace irc::test
