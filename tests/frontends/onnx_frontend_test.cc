// The ONNX frontend: node mapping, constant folding, names, dims, plans, import, and every kind of
// bad file. Models are built here with ONNX's own protobuf classes.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <google/protobuf/unknown_field_set.h>
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "dumps/model_yaml_writer.h"
#include "frontends/onnx/onnx_frontend.h"
#include "frontends/yaml/yaml_frontend.h"
#include "ops/reference_ops.h"
#include "ops/shape_inference.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"
#include "tests/approx.h"
#include "tests/model_util.h"
#include "tests/npz_util.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace irc::test {
namespace {

// A small ONNX model under construction.
struct OnnxModel {
  onnx::ModelProto model;
  onnx::GraphProto* graph;

  OnnxModel() {
    model.set_ir_version(8);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(17);
    graph = model.mutable_graph();
    graph->set_name("g");
  }

  void input(const std::string& name, std::vector<std::variant<int64_t, std::string>> dims,
             int32_t type = onnx::TensorProto::FLOAT) {
    auto* v = graph->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (const auto& d : dims) {
      auto* dim = t->mutable_shape()->add_dim();
      if (auto* n = std::get_if<int64_t>(&d)) dim->set_dim_value(*n);
      else dim->set_dim_param(std::get<std::string>(d));
    }
  }
  void output(const std::string& name) { graph->add_output()->set_name(name); }

  void floats(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
    auto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  void ints(const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> values) {
    auto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
  }

  onnx::NodeProto* node(const std::string& type, std::vector<std::string> in, std::vector<std::string> out,
                        const std::string& name = "") {
    auto* n = graph->add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return n;
  }
  static void intAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void intsAttr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& values) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  static void floatAttr(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }

  std::string bytes() const { return model.SerializeAsString(); }
};

struct Loaded {
  std::optional<LoadedGraph> graph;
  std::string errors;
};

Loaded load(const std::string& bytes, std::map<std::string, int64_t> dims = {}) {
  DiagnosticEngine diags("m.onnx", "");
  Loaded l;
  l.graph = loadOnnxModel(bytes, diags, OnnxOptions{"m", std::move(dims), true, true});
  l.errors = diags.renderToString();
  return l;
}

std::vector<std::string> opTypes(const Graph& g) {
  std::vector<std::string> out;
  for (OpId id : g.order) out.push_back(g.op(id).type);
  return out;
}

// x (2, 4) -> MatMul w (4, 3) -> Add b -> Relu
OnnxModel linearRelu() {
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{4}});
  m.floats("w", {4, 3}, std::vector<float>(12, 0.5f));
  m.floats("b", {3}, {1, 2, 3});
  m.node("MatMul", {"x", "w"}, {"xw"}, "/fc/MatMul");
  m.node("Add", {"b", "xw"}, {"y"}, "/fc/Add");
  m.node("Relu", {"y"}, {"out"}, "");
  m.output("out");
  return m;
}

}  // namespace

TEST_CASE("onnx: nodes become irc ops named after the nodes; results keep the tensor names") {
  Loaded l = load(linearRelu().bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"MatMul", "Add", "ReLU"});
  CHECK(g.op(g.order[0]).name == "/fc/MatMul");
  CHECK(g.op(g.order[2]).name == "Relu_2");  // an unnamed node: <OpType>_<index>
  CHECK(g.value(g.op(g.order[0]).results[0]).name == "xw");
  // Add(b, xw): the constant moves second, where irc's broadcast ops take it.
  CHECK(g.value(g.op(g.order[1]).operands[1].value).name == "b");
  CHECK(g.parameters.size() == 2);
  CHECK(g.value(g.outputs[0]).name == "out");
  CHECK(g.op(g.order[1]).loc == SourceLoc{2, 0});  // node 1
}

TEST_CASE("onnx: Gemm is MatMul with its transposes, alpha and beta * C") {
  OnnxModel m;
  m.input("a", {int64_t{2}, int64_t{4}});
  m.floats("b", {3, 4}, std::vector<float>(12, 1.0f));
  m.floats("c", {3}, {1, 2, 3});
  auto* n = m.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
  OnnxModel::intAttr(n, "transB", 1);
  OnnxModel::floatAttr(n, "alpha", 2.0f);
  OnnxModel::floatAttr(n, "beta", 0.5f);
  m.output("y");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  // beta * C is folded at import: C is a constant.
  CHECK(opTypes(g) == std::vector<std::string>{"MatMul", "Mul", "Add"});
  CHECK(std::get<bool>(g.op(g.order[0]).attrs.at("transpose_b")));
  CHECK(g.value(g.outputs[0]).type.shape == Shape{2, 3});
  const Value& bias = g.value(g.op(g.order[2]).operands[1].value);
  CHECK(bias.kind == ValueKind::Parameter);
  CHECK(l.graph->parameterData.at(g.op(g.order[2]).operands[1].value).data == std::vector<double>{0.5, 1, 1.5});
}

TEST_CASE("onnx: a shape chain folds into Reshape's constant shape") {
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{3}, int64_t{8}});
  m.ints("zero", {}, {0});
  m.ints("axes", {1}, {0});
  m.ints("tail", {2}, {4, -1});
  m.node("Shape", {"x"}, {"s"}, "shape");
  m.node("Gather", {"s", "zero"}, {"batch"}, "gather");
  m.node("Unsqueeze", {"batch", "axes"}, {"batch1"}, "unsqueeze");
  m.node("Concat", {"batch1", "tail"}, {"target"}, "concat");
  OnnxModel::intAttr(m.graph->mutable_node(3), "axis", 0);
  m.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  m.output("y");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Reshape"});
  // ONNX's -1 is resolved at import: irc's Reshape takes the full shape.
  CHECK(std::get<IntTuple>(*g.op(g.order[0]).operands[1].constant) == IntTuple{2, 4, 6});
  CHECK(g.value(g.outputs[0]).type.shape == Shape{2, 4, 6});
}

TEST_CASE("onnx: a Reshape target whose product overflows int64 is a located error (a fuzz finding: it wrapped around)") {
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{4}});
  m.ints("target", {3}, {-1, 4, int64_t{2377900603251621888}});
  m.node("Reshape", {"x", "target"}, {"y"}, "reshape");
  m.output("y");
  Loaded l = load(m.bytes());
  CHECK(!l.graph);
  CHECK(l.errors.find("m.onnx:node 0: error: ") != std::string::npos);
  CHECK(
      l.errors.find("the target shape (-1, 4, 2377900603251621888) has more than 72057594037927936 elements (docs/limits.md)") !=
      std::string::npos);
}

TEST_CASE("onnx: symbolic input dims take their sizes from --dim, and are an error without") {
  OnnxModel m;
  m.input("x", {std::string("batch"), int64_t{4}});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  Loaded missing = load(m.bytes());
  CHECK(!missing.graph);
  CHECK(missing.errors.find(
            "m.onnx: error: dim 0 of graph input 'x' is dynamic ('batch'); give it a size with --dim batch=VALUE") !=
        std::string::npos);
  Loaded bound = load(m.bytes(), {{"batch", 8}});
  REQUIRE_MESSAGE(bound.graph, bound.errors);
  CHECK(bound.graph->graph.value(bound.graph->graph.inputs[0]).type.shape == Shape{8, 4});
}

TEST_CASE("onnx: bad files are clear errors, never crashes") {
  CHECK(load("name: not onnx\n").errors.find("the file is not an ONNX model") != std::string::npos);
  CHECK(load("").errors.find("the file is empty") != std::string::npos);
  std::string full = linearRelu().bytes();
  for (size_t cut : {full.size() / 2, full.size() - 3, size_t{5}}) {
    CAPTURE(cut);
    Loaded l = load(full.substr(0, cut));
    CHECK(!l.graph);
    CHECK(!l.errors.empty());
  }
  OnnxModel dangling = linearRelu();
  dangling.graph->mutable_node(1)->set_input(1, "xww");
  std::string danglingErrors = load(dangling.bytes()).errors;
  CAPTURE(danglingErrors);
  CHECK(danglingErrors.find(
            "m.onnx:node 1: error: node '/fc/Add' (Add) reads 'xww', which no node, graph input or initializer defines; did "
            "you mean 'xw'?") != std::string::npos);
  OnnxModel unsupported = linearRelu();
  unsupported.graph->mutable_node(2)->set_op_type("Det");
  Loaded u = load(unsupported.bytes());
  CAPTURE(u.errors);
  CHECK(u.errors.find("m.onnx:node 2: error: node 'Det_2' has the op type Det, which irc does not map; irc maps Abs, Add,") !=
        std::string::npos);
  OnnxModel mismatch = linearRelu();
  mismatch.graph->mutable_initializer(0)->clear_float_data();
  CHECK(load(mismatch.bytes()).errors.find("tensor 'w' holds 0 elements; its shape needs 12") != std::string::npos);
}

TEST_CASE("onnx: Where becomes Select with the fill as a scalar; Pow takes an int exponent") {
  OnnxModel m;
  m.input("c", {int64_t{2}, int64_t{3}}, onnx::TensorProto::BOOL);
  m.input("x", {int64_t{2}, int64_t{3}});
  m.floats("fill", {}, {-1});
  m.ints("two", {}, {2});
  m.node("Pow", {"x", "two"}, {"sq"}, "pow");
  m.node("Where", {"c", "sq", "fill"}, {"y"}, "where");
  m.output("y");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Pow", "Select"});
  CHECK(std::get<ScalarTensor>(*g.op(g.order[0]).operands[1].constant) == ScalarTensor{DType::Float32, 2});
  CHECK(std::get<ScalarTensor>(*g.op(g.order[1]).operands[2].constant) == ScalarTensor{DType::Float32, -1});
  // The reference: Select picks x where cond, else the fill.
  TensorValue cond{{2, 3}, {1, 0, 1, 0, 1, 0}}, sq{{2, 3}, {1, 4, 9, 16, 25, 36}};
  auto out = evaluateOp(g.op(g.order[1]), {&cond, &sq, nullptr}, {{DType::Float32, {2, 3}}});
  CHECK(out[0].data == std::vector<double>{1, -1, 9, -1, 25, -1});
}

TEST_CASE("onnx: Slice and Expand of computed tensors become Slice and BroadcastTo") {
  OnnxModel m;
  m.input("x", {int64_t{4}, int64_t{8}});
  m.ints("starts", {1}, {2});
  m.ints("ends", {1}, {INT64_MAX});
  m.ints("axes", {1}, {-1});
  m.ints("shape", {3}, {2, 1, 1});
  m.node("Slice", {"x", "starts", "ends", "axes"}, {"s"}, "slice");
  m.node("Expand", {"s", "shape"}, {"e"}, "expand");
  m.output("e");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Slice", "BroadcastTo"});
  CHECK(std::get<IntTuple>(*g.op(g.order[0]).operands[1].constant) == IntTuple{0, 2});
  CHECK(std::get<IntTuple>(*g.op(g.order[0]).operands[2].constant) == IntTuple{4, 6});
  // Expand broadcasts both ways: a requested 1 keeps x's dim.
  CHECK(g.value(g.outputs[0]).type.shape == Shape{2, 4, 6});
}

TEST_CASE("onnx: a fold whose result grows with a dim's value stays a computed op (loading never scales with it)") {
  // ViT's class token expanded to the batch: with --dim batch=100000000 its fold held 6.4e9
  // float64 elements (a fuzzer's 30 s and 50 GB). Past kMaxFoldedElements it stays BroadcastTo;
  // a small batch still folds into a constant.
  OnnxModel m;
  m.input("x", {std::string("batch"), int64_t{1}, int64_t{64}});
  m.floats("cls", {1, 1, 64}, std::vector<float>(64, 0.5f));
  m.node("Shape", {"x"}, {"xs"}, "shape");
  m.ints("zero", {1}, {0});
  m.node("Gather", {"xs", "zero"}, {"b"}, "batch");
  m.ints("rest", {2}, {1, 64});
  m.node("Concat", {"b", "rest"}, {"want"}, "want");
  OnnxModel::intAttr(m.graph->mutable_node(2), "axis", 0);
  m.node("Expand", {"cls", "want"}, {"e"}, "expand");
  m.node("Add", {"x", "e"}, {"y"}, "add");
  m.output("y");
  Loaded big = load(m.bytes(), {{"batch", 100000000}});
  REQUIRE_MESSAGE(big.graph, big.errors);
  CHECK(opTypes(big.graph->graph) == std::vector<std::string>{"BroadcastTo", "Add"});
  CHECK(big.graph->graph.value(big.graph->graph.outputs[0]).type.shape == Shape{100000000, 1, 64});
  Loaded small = load(m.bytes(), {{"batch", 4}});
  REQUIRE_MESSAGE(small.graph, small.errors);
  CHECK(opTypes(small.graph->graph) == std::vector<std::string>{"Add"});
}

TEST_CASE("onnx: a size given for a dim the graph's inputs do not have is said, not ignored silently") {
  OnnxModel m;
  m.input("x", {std::string("batch"), int64_t{4}});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  Loaded l = load(m.bytes(), {{"batch", 2}, {"sequnce", 16}});
  REQUIRE_MESSAGE(l.graph, l.errors);
  CHECK(l.errors.find("warning: the size given for dim 'sequnce' (16) names no dynamic dim of the graph's inputs (they have "
                      "batch); it is ignored") != std::string::npos);
  CHECK(load(m.bytes(), {{"batch", 2}}).errors.empty());
}

TEST_CASE("onnx: a strided Slice of a computed tensor is a Slice of its contiguous dims and a Gather per strided dim") {
  // GPT-J's rotate_every_two x[..., ::2] and Swin's x[:, 1::2] (with a window on dim 0): x [4, 8]
  // -> rows 1..2, columns 1, 3, 5, 7; and a negative step, columns 7, 4, 1 (x[:, ::-3]).
  OnnxModel m;
  m.input("x", {int64_t{4}, int64_t{8}});
  m.ints("starts", {2}, {1, 1});
  m.ints("ends", {2}, {3, INT64_MAX});
  m.ints("axes", {2}, {0, 1});
  m.ints("steps", {2}, {1, 2});
  m.ints("rstarts", {1}, {-1});
  m.ints("rends", {1}, {INT64_MIN});
  m.ints("raxes", {1}, {1});
  m.ints("rsteps", {1}, {-3});
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"}, "strided");
  m.node("Slice", {"x", "rstarts", "rends", "raxes", "rsteps"}, {"r"}, "reversed");
  m.output("s");
  m.output("r");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Slice", "Gather", "Gather"});
  CHECK(g.value(g.outputs[0]).type.shape == Shape{2, 4});
  CHECK(g.value(g.outputs[1]).type.shape == Shape{4, 3});
  // The reference: x[i][j] = 8 i + j.
  TensorValue x{{4, 8}, {}};
  for (int i = 0; i < 32; ++i) x.data.push_back(i);
  const Op& window = g.op(g.order[0]);
  auto rows = evaluateOp(window, {&x, nullptr, nullptr}, {{DType::Float32, {2, 8}}});
  TensorValue positions{{4}, {1, 3, 5, 7}};
  auto picked = evaluateOp(g.op(g.order[1]), {&rows[0], &positions, nullptr}, {{DType::Float32, {2, 4}}});
  CHECK(picked[0].data == std::vector<double>{9, 11, 13, 15, 17, 19, 21, 23});
  CHECK(g.value(g.op(g.order[2]).operands[1].value).name.find("positions") != std::string::npos);
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", m.bytes());
  RunResult verified = runIrc({"verify", "m.onnx", "--device-num", "2"}, dir.path());
  CHECK_MESSAGE(verified.exitCode == 0, std::string(verified.out + verified.err));
}

TEST_CASE("onnx: Split into unequal parts becomes one Slice a part; opset 18's num_outputs on an indivisible dim too") {
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{10}});
  m.ints("sizes", {2}, {4, 6});
  OnnxModel::intAttr(m.node("Split", {"x", "sizes"}, {"a", "b"}, "/attn/Split"), "axis", 1);
  OnnxModel::intAttr(m.node("Split", {"x"}, {"c", "d", "e"}, "/thirds"), "axis", -1);
  m.output("a");
  m.output("b");
  m.output("e");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Slice", "Slice", "Slice", "Slice", "Slice"});
  CHECK(g.op(g.order[1]).name == "/attn/Split/part1");
  CHECK(std::get<IntTuple>(*g.op(g.order[1]).operands[1].constant) == IntTuple{0, 4});
  CHECK(std::get<IntTuple>(*g.op(g.order[1]).operands[2].constant) == IntTuple{2, 6});
  // 10 in three: 4, 4, 2.
  CHECK(g.value(g.outputs[2]).type.shape == Shape{2, 2});
  CHECK(std::get<IntTuple>(*g.op(g.order[4]).operands[1].constant) == IntTuple{0, 8});

  OnnxModel bad;
  bad.input("x", {int64_t{2}, int64_t{10}});
  bad.ints("sizes", {2}, {4, 5});
  bad.node("Split", {"x", "sizes"}, {"a", "b"}, "/attn/Split");
  bad.output("a");
  Loaded rejected = load(bad.bytes());
  CHECK(!rejected.graph);
  CHECK(rejected.errors.find("node '/attn/Split' (Split): splits dim 0 of size 2 into parts 4, 5 for 2 outputs") !=
        std::string::npos);
}

TEST_CASE("onnx: MatMul with a vector operand multiplies it as a row or column and drops that dim") {
  OnnxModel m;
  m.input("v", {int64_t{4}});
  m.input("x", {int64_t{3}, int64_t{5}, int64_t{4}});
  m.floats("w", {4, 2}, std::vector<float>(8, 0.5f));
  m.floats("u", {4}, {1, 2, 3, 4});
  m.node("MatMul", {"v", "w"}, {"vw"}, "/vw");    // (4) @ (4, 2) -> (2)
  m.node("MatMul", {"x", "u"}, {"xu"}, "/xu");    // (3, 5, 4) @ (4) -> (3, 5)
  m.node("MatMul", {"v", "u"}, {"dot"}, "/dot");  // (4) @ (4) -> ()
  m.output("vw");
  m.output("xu");
  m.output("dot");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  INFO(fmt::format("{}", fmt::join(opTypes(g), " ")));
  // u, an initializer, is made a column at import (folded): x @ u is BatchMatMul and a Reshape.
  CHECK(opTypes(g) ==
        std::vector<std::string>{"Reshape", "MatMul", "Reshape", "BatchMatMul", "Reshape", "Reshape", "MatMul", "Reshape"});
  CHECK(g.op(g.order[1]).name == "/vw");  // strategies find the product by the node's name
  CHECK(g.value(g.outputs[0]).type.shape == Shape{2});
  CHECK(g.value(g.outputs[1]).type.shape == Shape{3, 5});
  CHECK(g.value(g.outputs[2]).type.shape == Shape{});
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", m.bytes());
  RunResult verified = runIrc({"verify", "m.onnx", "--device-num", "2"}, dir.path());
  CHECK_MESSAGE(verified.exitCode == 0, std::string(verified.out + verified.err));
}

TEST_CASE("onnx: LayerNormalization's Mean and InvStdDev outputs are LayerNorm's mean and 1/sqrt(variance + epsilon)") {
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{4}});
  m.floats("g", {4}, {1, 1, 1, 1});
  OnnxModel::floatAttr(m.node("LayerNormalization", {"x", "g"}, {"y", "mean", "inv"}, "/ln"), "epsilon", 0.5f);
  m.output("y");
  m.output("mean");
  m.output("inv");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"LayerNorm", "Add", "Pow"});
  CHECK(g.value(g.outputs[1]).type.shape == Shape{2, 1});
  CHECK(g.value(g.outputs[2]).type.shape == Shape{2, 1});
  // x row (1, 2, 3, 4): mean 2.5, variance 1.25; InvStdDev 1 / sqrt(1.75).
  TensorValue x = TensorValue::zeros({2, 4});
  for (int i = 0; i < 8; ++i) x.data[i] = i % 4 + 1;
  TensorValue gamma = TensorValue::zeros({4}), beta = TensorValue::zeros({4});
  gamma.data.assign(4, 1.0);
  std::vector<TensorType> types;
  for (ValueId r : g.op(g.order[0]).results) types.push_back(g.value(r).type);
  auto ln = evaluateOp(g.op(g.order[0]), {&x, &gamma, &beta}, types);
  CHECK(ln[1].data[0] == relative(2.5));
  auto shifted = evaluateOp(g.op(g.order[1]), {&ln[2], nullptr}, {g.value(g.op(g.order[1]).results[0]).type});
  auto inverse = evaluateOp(g.op(g.order[2]), {&shifted[0], nullptr}, {g.value(g.outputs[2]).type});
  CHECK(inverse[0].data[1] == relative(1 / std::sqrt(1.75)));
}

TEST_CASE("onnx: a comparison with a constant on the left mirrors; Clip, LeakyRelu, Mean become chains of binary ops") {
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{3}});
  m.floats("half", {}, {0.5f});
  m.floats("lo", {}, {-1.0f});
  m.node("Less", {"half", "x"}, {"gt"}, "/mask/Less");  // 0.5 < x is x > 0.5
  m.node("Clip", {"x", "lo"}, {"clipped"}, "/clip");
  OnnxModel::floatAttr(m.node("LeakyRelu", {"clipped"}, {"leaky"}, "/leaky"), "alpha", 2.0f);
  m.node("Mean", {"x", "leaky", "clipped"}, {"mean"}, "/mean");
  m.output("gt");
  m.output("mean");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Greater", "Maximum", "Mul", "Minimum", "Add", "Add", "Mul"});
  CHECK(g.value(g.outputs[0]).type.dtype == DType::Bool);
  CHECK(g.op(g.order[3]).name == "/leaky");
  CHECK(g.op(g.order[6]).name == "/mean");
  CHECK(std::get<ScalarTensor>(*g.op(g.order[6]).operands[1].constant).value == relative(1.0 / 3));
}

TEST_CASE("onnx: before opset 11 Clip's bounds are attributes") {
  OnnxModel m;
  m.model.mutable_opset_import(0)->set_version(6);
  m.input("x", {int64_t{2}, int64_t{3}});
  onnx::NodeProto* clip = m.node("Clip", {"x"}, {"y"}, "/clip");
  OnnxModel::floatAttr(clip, "min", -0.5f);
  OnnxModel::floatAttr(clip, "max", 2.0f);
  m.output("y");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Maximum", "Minimum"});
  CHECK(g.op(g.order[0]).name == "/clip/min");
  CHECK(std::get<ScalarTensor>(*g.op(g.order[0]).operands[1].constant).value == -0.5);
  CHECK(std::get<ScalarTensor>(*g.op(g.order[1]).operands[1].constant).value == 2.0);
}

TEST_CASE("onnx: import writes YAML that loads back into the same graph") {
  Loaded l = load(linearRelu().bytes());
  REQUIRE(l.graph);
  std::string yaml = writeModelYaml(l.graph->graph, onnxDefaultSettings(1));
  CHECK(yaml.find("  - {name: /fc/Add, type: Add, inputs: [/fc/MatMul, b]}") != std::string::npos);
  Graph back = parseModel(yaml);
  CHECK(opTypes(back) == opTypes(l.graph->graph));
  CHECK(back.value(back.outputs[0]).type == l.graph->graph.value(l.graph->graph.outputs[0]).type);
}

TEST_CASE("onnx plan: strategies by node name or glob; a key matching nothing names the closest") {
  TempDir dir;
  OnnxModel m = linearRelu();
  writeFile(dir.path() + "/m.onnx", m.bytes());
  auto plan = [&](const std::string& strategies) {
    std::string text = "graph: m.onnx\nparallel: {device_num: 2}\nstrategies:\n" + strategies;
    DiagnosticEngine diags("plan.yaml", text);
    auto g = loadModel(text, diags, {"plan", dir.path()});
    return std::make_pair(std::move(g), diags.renderToString());
  };
  auto [g, errors] = plan("  \"/fc/*\": {in_strategy: [[2, 1], [1]]}\n");
  CHECK(!g);  // /fc/* matches MatMul too, whose strategy needs two tuples
  CHECK(errors.find("in_strategy of op '/fc/MatMul'") != std::string::npos);
  auto [g2, errors2] = plan("  /fc/MatMul: {in_strategy: [[2, 1], [1, 1]]}\n  \"*/Add\": {in_strategy: [[2, 1], [1]]}\n");
  REQUIRE_MESSAGE(g2, errors2);
  int configured = 0;
  for (const Op& op : g2->graph.ops) configured += op.annotation->inStrategy.has_value();
  CHECK(configured == 2);
  auto [g3, errors3] = plan("  /fc/MatMull: {in_strategy: [[2, 1], [1, 1]]}\n");
  CHECK(errors3.find("plan.yaml:4:3: error: strategies key '/fc/MatMull' matches no node of the graph; closest: '/fc/MatMul'") !=
        std::string::npos);
  auto [g4, errors4] = plan("  /fc/MatMul: {in_strategy: [[2, 1], [1, 1]]}\n  \"/fc/Mat*\": {in_strategy: [[2, 1], [1, 1]]}\n");
  CHECK(errors4.find("node '/fc/MatMul' is matched by both '/fc/MatMul' and '/fc/Mat*'") != std::string::npos);
  auto [g5, errors5] = plan("  /fc/MatMul: {in_strategy: [[2, 1], [1, 1]]}\n");
  CHECK(g5);
}

TEST_CASE("onnx plan: the ONNX file's problems are reported at the plan's graph line") {
  TempDir dir;
  writeFile(dir.path() + "/bad.onnx", "garbage");
  std::string text = "graph: bad.onnx\nparallel: {device_num: 2}\n";
  DiagnosticEngine diags("plan.yaml", text);
  CHECK(!loadModel(text, diags, {"plan", dir.path()}));
  CHECK(diags.renderToString().find("plan.yaml:1:8: error: bad.onnx: the file is not an ONNX model") != std::string::npos);
  std::string missing = "graph: nowhere.onnx\nparallel: {device_num: 2}\n";
  DiagnosticEngine d2("plan.yaml", missing);
  CHECK(!loadModel(missing, d2, {"plan", dir.path()}));
  CHECK(d2.renderToString().find("plan.yaml:1:8: error: cannot read '" + dir.path() +
                                 "/nowhere.onnx': No such file or directory") != std::string::npos);
}

TEST_CASE("irc on an ONNX file: data parallel over --device-num; --dump-locations names nodes") {
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", linearRelu().bytes());
  RunResult r =
      runIrc({"m.onnx", "--device-num", "2", "--dump-after", "step_parallel_begin", "--dump-locations", "-q"}, dir.path());
  REQUIRE(r.exitCode == 0);
  std::string dump = readFile(dir.path() + "/m_ir/rank_0/step_parallel_begin_0001.ir");
  CHECK(dump.find("search_mode: data_parallel") != std::string::npos);
  CHECK(dump.find("# In file m.onnx:node 1") != std::string::npos);
  RunResult explained = runIrc({"explain", "m.onnx", "/fc/Add", "--device-num", "2"}, dir.path());
  CHECK(explained.exitCode == 0);
  CHECK(explained.out.find("/fc/Add (Add), model op at node 1\n") != std::string::npos);
  RunResult bad = runIrc({"m.onnx", "--dim", "batch"}, dir.path());
  CHECK(bad.exitCode == 2);
  writeFile(dir.path() + "/t.onnx", linearRelu().bytes().substr(0, 40));
  RunResult truncated = runIrc({"t.onnx"}, dir.path());
  CHECK(truncated.exitCode == 1);
  CHECK(truncated.err.find("t.onnx: error: the file is not an ONNX model") != std::string::npos);
}

TEST_CASE("onnx --opaque-unsupported: an unmapped node reading no computed tensor is an error, not an op without operands") {
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{3}});
  m.node("MyRandom", {}, {"r"}, "/noise");
  m.node("Add", {"x", "r"}, {"y"}, "/add");
  m.output("y");
  DiagnosticEngine diags("m.onnx", "");
  OnnxOptions options{"m", {}, true, true};
  options.opaqueUnsupported = true;
  CHECK(!loadOnnxModel(m.bytes(), diags, options));
  INFO(diags.renderToString());
  CHECK(diags.renderToString().find("m.onnx:node 0: error: node '/noise' (MyRandom) is not mapped and cannot be kept opaque: it "
                                    "reads no computed tensor") != std::string::npos);
}

TEST_CASE("onnx --onnx-shape-check: a model ONNX's own shape inference crashes on is a diagnostic, not irc's crash") {
  // Debian's libonnx 1.12 reads out of bounds on a LayerNormalization axis past the rank (found
  // by the fuzzer); its inference runs in a child process.
  OnnxModel m;
  m.input("x", {int64_t{3}, int64_t{4}});
  m.input("g", {int64_t{4}});
  m.input("b", {int64_t{4}});
  OnnxModel::intAttr(m.node("LayerNormalization", {"x", "g", "b"}, {"y", "mean", "inv"}, "/ln"), "axis", -2049);
  m.output("y");
  for (bool check : {true, false}) {
    CAPTURE(check);
    DiagnosticEngine diags("m.onnx", "");
    OnnxOptions options;
    options.defaultName = "m";
    options.checkShapesWithOnnx = check;
    CHECK(!loadOnnxModel(m.bytes(), diags, options));
    std::string text = diags.renderToString();
    INFO(text);
    if (check)
      CHECK(text.find("m.onnx: error: ONNX's shape inference (libonnx) crashed on the model (signal 11") != std::string::npos);
    else
      CHECK(text.find("m.onnx:node 0: error: node '/ln' (LayerNormalization): as irc's LayerNorm: begin_norm_axis -2049 is "
                      "out of range for rank 2") != std::string::npos);
  }
  // A model ONNX's inference accepts still comes back inferred: the cross-check sees its shapes.
  OnnxModel good;
  good.input("x", {int64_t{3}, int64_t{4}});
  good.node("Relu", {"x"}, {"y"}, "/relu");
  good.output("y");
  DiagnosticEngine diags("g.onnx", "");
  OnnxOptions options;
  options.defaultName = "g";
  options.checkShapesWithOnnx = true;
  CHECK(loadOnnxModel(good.bytes(), diags, options));
  CHECK(!diags.hasErrors());
}

TEST_CASE("onnx --opaque-unsupported: an unmapped node is an Opaque op, whole on every rank, a placeholder in verify") {
  OnnxModel m;
  m.input("x", {int64_t{4}, int64_t{8}});
  m.floats("w1", {8, 8}, std::vector<float>(64, 0.25f));
  m.floats("w2", {8, 8}, std::vector<float>(64, 0.5f));
  m.node("MatMul", {"x", "w1"}, {"h"}, "/up/MatMul");
  m.node("Atan", {"h"}, {"a"}, "/act/Atan");
  m.node("MatMul", {"a", "w2"}, {"y"}, "/down/MatMul");
  m.output("y");
  CHECK(load(m.bytes()).errors.find("node '/act/Atan' (Atan) reads the computed tensor 'h'; irc has no Atan op") !=
        std::string::npos);
  DiagnosticEngine diags("m.onnx", "");
  OnnxOptions options{"m", {}, false, false, true};
  auto kept = loadOnnxModel(m.bytes(), diags, options);
  REQUIRE_MESSAGE(kept, diags.renderToString());
  const Op& opaque = kept->graph.op(kept->graph.order[1]);
  CHECK(opaque.type == "Opaque");
  CHECK(std::get<std::string>(opaque.attrs.at("op_type")) == "Atan");
  CHECK(kept->graph.value(opaque.results[0]).type == TensorType{DType::Float32, {4, 8}});

  // A plan that splits the MatMuls around it: its operand is gathered whole, and every rank
  // agrees with the single-device program.
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", m.bytes());
  std::string plan =
      "graph: m.onnx\nparallel: {device_num: 4}\nstrategies:\n"
      "  /up/MatMul: {in_strategy: [[2, 1], [1, 2]]}\n  /down/MatMul: {in_strategy: [[2, 2], [2, 1]]}\n";
  writeFile(dir.path() + "/plan.yaml", plan);
  RunResult v = runIrc({"verify", "plan.yaml", "--opaque-unsupported"}, dir.path());
  CHECK(v.exitCode == 0);
  CHECK(v.out.find("all 4 ranks agree") != std::string::npos);
  CHECK(v.out.find("1 opaque op not checked (their results are placeholders; what follows them is): '/act/Atan' (Atan)") !=
        std::string::npos);
  RunResult e = runIrc({"plan.yaml", "--opaque-unsupported", "--dump-after", "step_parallel_end", "-q"}, dir.path());
  REQUIRE(e.exitCode == 0);
  std::string dump = readFile(dir.path() + "/plan_ir/rank_0/step_parallel_end_0003.ir");
  CHECK(dump.find("= Opaque(") != std::string::npos);
  CHECK(dump.find("AllGather") != std::string::npos);  // the opaque op's operand, made whole
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE(
    "onnx external data: read from the file beside the model; without it, shapes only with a warning; bad entries are errors") {
  TempDir dir;
  // w (2, 2) lives at offset 8 of w.bin; a Transpose of it alone would fold, so it needs the numbers.
  auto make = [](const std::string& location, const std::string& length) {
    OnnxModel m;
    m.input("x", {int64_t{2}, int64_t{2}});
    auto* t = m.graph->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(2), t->add_dims(2);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto entry = [&](const std::string& key, const std::string& value) {
      auto* e = t->add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    entry("location", location);
    entry("offset", "8");
    if (!length.empty()) entry("length", length);
    m.node("Transpose", {"w"}, {"wt"}, "/t");
    m.node("MatMul", {"x", "wt"}, {"y"}, "/mm");
    m.output("y");
    return m.bytes();
  };
  std::string data(8, 'x');
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) data.append(reinterpret_cast<const char*>(&v), sizeof v);
  writeFile(dir.path() + "/w.bin", data);
  auto loadIn = [&](const std::string& bytes, const std::string& from) {
    DiagnosticEngine diags("m.onnx", "");
    OnnxOptions options{"m", {}, true};
    options.externalDataDir = from;
    Loaded l;
    l.graph = loadOnnxModel(bytes, diags, options);
    l.errors = diags.renderToString();
    return l;
  };
  Loaded ok = loadIn(make("w.bin", "16"), dir.path());
  REQUIRE(ok.graph);
  CHECK(ok.errors == "");
  // The Transpose folded over the file's numbers: the MatMul reads its result as a parameter.
  CHECK(opTypes(ok.graph->graph) == std::vector<std::string>{"MatMul"});
  REQUIRE(ok.graph->parameterData.size() == 1);
  CHECK(ok.graph->parameterData.begin()->second.data == std::vector<double>{1, 3, 2, 4});
  // Without the file: w is a parameter of its declared shape, the Transpose stays computed.
  TempDir empty;
  Loaded shapes = loadIn(make("w.bin", ""), empty.path());
  REQUIRE(shapes.graph);
  CHECK(opTypes(shapes.graph->graph) == std::vector<std::string>{"Transpose", "MatMul"});
  CHECK(shapes.errors.find("warning: tensor 'w' keeps its data in the external file '" + empty.path() +
                           "/w.bin', which is not there; '/t' stays a computed op instead of being folded (shapes only)") !=
        std::string::npos);
  // A location outside the model's folder and a length that does not fit are errors.
  Loaded outside = loadIn(make("../w.bin", ""), dir.path());
  CHECK(!outside.graph);
  CHECK(outside.errors.find("names the external file '../w.bin'; it must be a path inside the model's folder") !=
        std::string::npos);
  Loaded wrongLength = loadIn(make("w.bin", "12"), dir.path());
  CHECK(!wrongLength.graph);
  CHECK(wrongLength.errors.find("has external data length 12; its shape and type need 16 bytes") != std::string::npos);
  writeFile(dir.path() + "/short.bin", std::string(10, 'x'));
  Loaded truncated = loadIn(make("short.bin", ""), dir.path());
  CHECK(!truncated.graph);
  CHECK(truncated.errors.find("ends before bytes 8 .. 24") != std::string::npos);
  // Through a plan, the warning is reported at the plan's graph line and the compile goes on.
  writeFile(empty.path() + "/m.onnx", make("w.bin", ""));
  writeFile(empty.path() + "/plan.yaml", "graph: m.onnx\nparallel: {device_num: 1}\n");
  RunResult plan = runIrc({empty.path() + "/plan.yaml", "-q"});
  CHECK(plan.exitCode == 0);
  CHECK(plan.err.find("plan.yaml:1:8: warning: m.onnx:node 0: tensor 'w' keeps its data in the external file") !=
        std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("onnx module paths: from the dynamo exporter's node metadata (field 9) and from TorchScript names") {
  OnnxModel m = linearRelu();  // nodes /fc/MatMul, /fc/Add, and an unnamed Relu
  // The Relu carries the dynamo exporter's metadata: its deepest module scope is m.act.
  onnx::NodeProto* relu = m.graph->mutable_node(2);
  auto addMetadata = [](onnx::NodeProto* node, const std::string& key, const std::string& value) {
    onnx::StringStringEntryProto entry;
    entry.set_key(key);
    entry.set_value(value);
    node->GetReflection()->MutableUnknownFields(node)->AddLengthDelimited(9, entry.SerializeAsString());
  };
  addMetadata(relu, "namespace", ": __main__.Wrap/m.act: torch.nn.modules.activation.ReLU/relu: aten.relu.default");
  addMetadata(relu, "pkg.torch.onnx.name_scopes", "['', 'm', 'm.act', 'relu']");
  Loaded l = load(m.bytes());
  REQUIRE(l.graph);
  const Graph& g = l.graph->graph;
  std::vector<std::string> modules;
  for (OpId id : g.order) modules.push_back(g.moduleOf(g.op(id)));
  CHECK(modules == std::vector<std::string>{"fc", "fc", "m.act"});
  // The dumps show them with --dump-scopes; the report and explain always.
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", m.bytes());
  RunResult r = runIrc({dir.path() + "/m.onnx", "--dump-after", "parse", "--dump-scopes", "--dump-dir", dir.path() + "/d",
                        "--report", dir.path() + "/r.json", "-q"});
  REQUIRE(r.exitCode == 0);
  std::string dump = readFile(dir.path() + "/d/rank_0/parse_0000.ir");
  CHECK(dump.find("      # scope: fc\n") != std::string::npos);
  CHECK(dump.find("      # scope: m.act\n") != std::string::npos);
  CHECK(readFile(dir.path() + "/r.json").find("\"module\":\"m.act\"") != std::string::npos);
  CHECK(runIrc({"explain", dir.path() + "/m.onnx", "/fc/MatMul"}).out.find("  module: fc\n") != std::string::npos);
  // Malformed metadata is a located error.
  OnnxModel bad = linearRelu();
  bad.graph->mutable_node(1)
      ->GetReflection()
      ->MutableUnknownFields(bad.graph->mutable_node(1))
      ->AddLengthDelimited(9, "\xff\xff\xff");
  Loaded b = load(bad.bytes());
  CHECK(!b.graph);
  CHECK(b.errors.find("m.onnx:node 1: error: node '/fc/Add' has a metadata entry (field 9) that is not a key/value pair") !=
        std::string::npos);
  OnnxModel badScopes = linearRelu();
  addMetadata(badScopes.graph->mutable_node(0), "pkg.torch.onnx.name_scopes", "['', 'm");
  CHECK(load(badScopes.bytes()).errors.find("which is not a list of quoted names") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {
namespace {

// Runs a loaded graph's ops in order on the reference kernels; returns the first output.
TensorValue runReference(const Graph& g, const std::map<ValueId, TensorValue>& inputs) {
  std::map<ValueId, TensorValue> values = inputs;
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    std::vector<const TensorValue*> operands;
    for (const Operand& o : op.operands) operands.push_back(o.isValue() ? &values.at(o.value) : nullptr);
    std::vector<TensorType> types;
    for (ValueId r : op.results) types.push_back(g.value(r).type);
    auto results = evaluateOp(op, operands, types);
    for (size_t i = 0; i < results.size(); ++i) values[op.results[i]] = std::move(results[i]);
  }
  return values.at(g.outputs[0]);
}

}  // namespace

TEST_CASE(
    "onnx: written-out GELU (TorchScript's and the dynamo exporter's forms) and x * Sigmoid(x) import as ExactGeLU and SiLU") {
  // h = x / sqrt 2 -> Erf -> + 1 -> x * . -> * 0.5 (TorchScript); g = (h2 * 0.5) * (1 + Erf(h2 *
  // 0.7071...)) (dynamo); s = g * Sigmoid(g); and a GELU whose Erf result another node reads too,
  // which must stay written out.
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{3}});
  m.floats("sqrt2", {}, {1.4142135f});
  m.floats("one", {}, {1.0f});
  m.floats("half", {}, {0.5f});
  m.floats("inv_sqrt2", {}, {0.70710677f});
  m.node("Div", {"x", "sqrt2"}, {"d"}, "/mlp/act/Div");
  m.node("Erf", {"d"}, {"e"}, "/mlp/act/Erf");
  m.node("Add", {"e", "one"}, {"p"}, "/mlp/act/Add");
  m.node("Mul", {"x", "p"}, {"xp"}, "/mlp/act/Mul");
  m.node("Mul", {"xp", "half"}, {"h2"}, "/mlp/act/Mul_1");
  m.node("Mul", {"h2", "inv_sqrt2"}, {"d2"}, "/act2/Mul");
  m.node("Erf", {"d2"}, {"e2"}, "/act2/Erf");
  m.node("Add", {"one", "e2"}, {"p2"}, "/act2/Add");
  m.node("Mul", {"half", "h2"}, {"hh"}, "/act2/Mul_1");
  m.node("Mul", {"hh", "p2"}, {"g"}, "/act2/Mul_2");
  m.node("Sigmoid", {"g"}, {"sg"}, "/silu/Sigmoid");
  m.node("Mul", {"sg", "g"}, {"s"}, "/silu/Mul");
  m.node("Div", {"s", "sqrt2"}, {"d3"}, "/act3/Div");
  m.node("Erf", {"d3"}, {"e3"}, "/act3/Erf");
  m.node("Add", {"e3", "one"}, {"p3"}, "/act3/Add");
  m.node("Mul", {"s", "p3"}, {"sp"}, "/act3/Mul");
  m.node("Mul", {"sp", "half"}, {"g3"}, "/act3/Mul_1");
  m.node("Add", {"g3", "e3"}, {"out"}, "/out/Add");
  m.output("out");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"ExactGeLU", "ExactGeLU", "SiLU", "RealDiv", "Erf", "Add", "Mul", "Mul", "Add"});
  // Each fused op is named after its form's last node and keeps its result's name.
  CHECK(g.op(g.order[0]).name == "/mlp/act/Mul_1");
  CHECK(g.op(g.order[1]).name == "/act2/Mul_2");
  CHECK(g.op(g.order[2]).name == "/silu/Mul");
  CHECK(g.value(g.op(g.order[2]).results[0]).name == "s");
  // The numbers of the written-out forms, in float64.
  auto gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  TensorValue x{{2, 3}, {-2.0, -0.5, 0.0, 0.3, 1.0, 2.5}};
  TensorValue out = runReference(g, {{g.inputs[0], x}});
  for (size_t i = 0; i < x.data.size(); ++i) {
    double sv = silu(gelu(gelu(x.data[i])));
    CHECK(out.data[i] == relative(gelu(sv) + std::erf(sv / std::sqrt(2.0))).epsilon(1e-6));
  }
}

TEST_CASE("onnx: the exporter's key transpose round trip [b, h, s, d] -> [b*h, s, d] -> [b*h, d, s] -> [b, h, d, s] folds") {
  // The dynamo exporter's scaled-dot-product attention transposes the keys so; the merged b*h
  // would make a head split cost an AllGather (the merge holds it on a minor factor).
  OnnxModel m;
  m.input("k", {int64_t{2}, int64_t{4}, int64_t{3}, int64_t{5}});
  m.ints("merged", {3}, {8, 3, 5});
  m.ints("split", {4}, {2, 4, 5, 3});
  m.node("Reshape", {"k", "merged"}, {"k3"}, "node_Reshape_1");
  auto* t = m.node("Transpose", {"k3"}, {"kt"}, "node_Transpose_2");
  auto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : {0, 2, 1}) perm->add_ints(p);
  m.node("Reshape", {"kt", "split"}, {"out"}, "node_Reshape_3");
  m.output("out");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Transpose", "Reshape"});
  const Op& transpose = g.op(g.order[0]);
  CHECK(transpose.name == "node_Transpose_2");
  CHECK(std::get<IntTuple>(*transpose.operands[1].constant) == IntTuple{0, 1, 3, 2});
  CHECK(g.value(transpose.results[0]).type.shape == Shape{2, 4, 5, 3});
  CHECK(g.value(g.op(g.order[1]).operands[0].value).name == "kt");
  // The same numbers: out[b, h, j, i] = k[b, h, i, j].
  TensorValue k = TensorValue::zeros({2, 4, 3, 5});
  for (int64_t i = 0; i < k.size(); ++i) k.data[i] = static_cast<double>(i);
  TensorValue out = runReference(g, {{g.inputs[0], k}});
  REQUIRE(out.shape == Shape{2, 4, 5, 3});
  bool same = true;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 5; ++j)
          same = same && out.data[((b * 4 + h) * 5 + j) * 3 + i] == k.data[((b * 4 + h) * 3 + i) * 5 + j];
  CHECK(same);
  // A merged tensor read twice stays as written: the fold would have to keep the merge anyway.
  m.node("Relu", {"k3"}, {"k3_relu"}, "node_Relu_4");
  m.output("k3_relu");
  Loaded twice = load(m.bytes());
  REQUIRE_MESSAGE(twice.graph, twice.errors);
  CHECK(opTypes(twice.graph->graph) == std::vector<std::string>{"Reshape", "Transpose", "Reshape", "ReLU"});
}

TEST_CASE("onnx: attention on batch-and-heads merged dims (OPT's bmm path) runs on the unmerged dims") {
  // Reshape [b, h, s, d] -> [b*h, s, d], bmm, softmax, bmm, Reshape back: between the merges and
  // the Reshape back every op keeps dim 0 a batch, so the import runs them on [b, h, ...] and
  // drops both Reshapes. Before, a head split rode the merged dim's minor factor: tensor
  // parallelism gathered q, k and v and cut them again.
  auto perm = [](onnx::NodeProto* n, const std::vector<int64_t>& p) { OnnxModel::intsAttr(n, "perm", p); };
  auto attention = [&](bool merged) {
    OnnxModel m;
    for (const char* t : {"q", "k", "v"}) m.input(t, {int64_t{2}, int64_t{4}, int64_t{3}, int64_t{5}});
    std::string q = "q", k = "k", v = "v";
    if (merged) {
      m.ints("merged", {3}, {8, 3, 5});
      m.ints("unmerged", {4}, {2, 4, 3, 5});
      for (std::string* t : {&q, &k, &v}) {
        m.node("Reshape", {*t, "merged"}, {*t + "3"}, "/attn/Reshape_" + *t);
        *t += "3";
      }
    }
    perm(m.node("Transpose", {k}, {"kt"}, "/attn/Transpose"),
         merged ? std::vector<int64_t>{0, 2, 1} : std::vector<int64_t>{0, 1, 3, 2});
    m.node("MatMul", {q, "kt"}, {"scores"}, "/attn/MatMul");
    OnnxModel::intAttr(m.node("Softmax", {"scores"}, {"probs"}, "/attn/Softmax"), "axis", -1);
    m.node("MatMul", {"probs", v}, {"context"}, "/attn/MatMul_1");
    std::string context = "context";
    if (merged) {
      m.node("Reshape", {"context", "unmerged"}, {"context4"}, "/attn/Reshape_back");
      context = "context4";
    }
    perm(m.node("Transpose", {context}, {"out"}, "/attn/Transpose_1"), {0, 2, 1, 3});
    m.output("out");
    return m;
  };
  Loaded merged = load(attention(true).bytes()), plain = load(attention(false).bytes());
  REQUIRE_MESSAGE(merged.graph, merged.errors);
  REQUIRE_MESSAGE(plain.graph, plain.errors);
  const Graph& g = merged.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Transpose", "BatchMatMul", "Softmax", "BatchMatMul", "Transpose"});
  CHECK(std::get<IntTuple>(*g.op(g.order[0]).operands[1].constant) == IntTuple{0, 1, 3, 2});
  CHECK(g.value(g.op(g.order[2]).results[0]).type.shape == Shape{2, 4, 3, 3});
  // The same numbers as attention written on [b, h, s, d].
  std::map<ValueId, TensorValue> inputs;
  for (size_t i = 0; i < 3; ++i) {
    TensorValue t = TensorValue::zeros({2, 4, 3, 5});
    for (int64_t j = 0; j < t.size(); ++j) t.data[j] = std::sin(static_cast<double>(j * (i + 2)));
    inputs[g.inputs[i]] = t;
  }
  TensorValue got = runReference(g, inputs), want = runReference(plain.graph->graph, inputs);
  CHECK(got.shape == want.shape);
  CHECK(got.data == want.data);
  // Where another op reads the merged dim as no batch (a Transpose moving it), all stays as written.
  OnnxModel kept = attention(true);
  perm(kept.node("Transpose", {"q3"}, {"q3t"}, "/other/Transpose"), {1, 0, 2});
  kept.output("q3t");
  Loaded stays = load(kept.bytes());
  REQUIRE_MESSAGE(stays.graph, stays.errors);
  CHECK(opTypes(stays.graph->graph) == std::vector<std::string>{"Reshape", "Reshape", "Reshape", "Transpose", "BatchMatMul",
                                                                "Softmax", "BatchMatMul", "Reshape", "Transpose", "Transpose"});
}

TEST_CASE("verify --inputs on a plan runs the ONNX file's own weights, as on the file itself") {
  // Before: a plan's graph lost the file's weights, so verify --expect compared seeded weights'
  // outputs with the file's and reported a mismatch on a correct model.
  TempDir dir;
  OnnxModel m = linearRelu();
  writeFile(dir.path() + "/m.onnx", m.bytes());
  writeFile(dir.path() + "/plan.yaml", "graph: m.onnx\nparallel: {device_num: 2}\n");
  // x = 1 everywhere: xw = 0.5 * 4 = 2 per column, + b (1, 2, 3), ReLU.
  writeNpz(dir.path() + "/in.npz", {{"x", npy("<f4", {2, 4}, std::vector<double>(8, 1.0))}});
  writeNpz(dir.path() + "/out.npz", {{"out", npy("<f4", {2, 3}, {3, 4, 5, 3, 4, 5})}});
  for (const std::string model : {dir.path() + "/m.onnx", dir.path() + "/plan.yaml"}) {
    std::vector<std::string> args = {"verify", model, "--inputs", dir.path() + "/in.npz", "--expect", dir.path() + "/out.npz"};
    if (model.ends_with(".onnx")) args.insert(args.end(), {"--device-num", "2"});
    RunResult r = runIrc(args);
    CHECK_MESSAGE(r.exitCode == 0, model, r.err);
  }
}

}  // namespace irc::test

namespace irc::test {
namespace {

// x (4, 8, 16) -> fc1 (Linear 16 -> 32, TorchScript names) -> Relu -> fc2 (Linear 32 -> 16).
// fc1's weight is [in, out] as the exporters fold torch's transpose; fc2 is a Gemm-style
// MatMul... written as MatMul + Add too, with its weight [in, out].
OnnxModel twoLinears() {
  OnnxModel m;
  m.input("x", {int64_t{4}, int64_t{8}, int64_t{16}});
  m.floats("fc1.weight", {16, 32}, std::vector<float>(16 * 32, 0.1f));
  m.floats("fc1.bias", {32}, std::vector<float>(32, 0.2f));
  m.floats("fc2.weight", {32, 16}, std::vector<float>(32 * 16, 0.3f));
  m.floats("fc2.bias", {16}, std::vector<float>(16, 0.4f));
  m.node("MatMul", {"x", "fc1.weight"}, {"h1"}, "/m/mlp/fc1/MatMul");
  m.node("Add", {"fc1.bias", "h1"}, {"h2"}, "/m/mlp/fc1/Add");
  m.node("Relu", {"h2"}, {"h3"}, "/m/mlp/act/Relu");
  m.node("MatMul", {"h3", "fc2.weight"}, {"h4"}, "/m/mlp/fc2/MatMul");
  m.node("Add", {"fc2.bias", "h4"}, {"out"}, "/m/mlp/fc2/Add");
  m.output("out");
  return m;
}

using json = nlohmann::json;

struct PlanRun {
  std::string errors;
  std::map<std::string, int> collectives;  // communicating inserted ops by type
  int exitCode = 0;
};

PlanRun runPlan(const TempDir& dir, const std::string& plan) {
  writeFile(dir.path() + "/plan.yaml", plan);
  PlanRun run;
  RunResult r = runIrc({dir.path() + "/plan.yaml", "--report", dir.path() + "/r.json", "-q"});
  run.exitCode = r.exitCode;
  run.errors = r.err;
  if (r.exitCode != 0) return run;
  json report = json::parse(readFile(dir.path() + "/r.json"));
  auto count = [&](const json& op) {
    std::string type = op["type"];
    if (type == "AllReduce" || type == "AllGather" || type == "ReduceScatter" || type == "AlltoAll") ++run.collectives[type];
  };
  for (const auto& op : report["ops"])
    for (const auto& f : op["forward_ops"]) count(f);
  for (const auto& e : report["redistributions"])
    for (const auto& f : e["ops"]) count(f);
  return run;
}

}  // namespace

TEST_CASE("plan modules: DTensor's colwise and rowwise on torch module paths run Megatron's one AllReduce") {
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", twoLinears().bytes());
  for (std::string mode : {"sharding_propagation", "factor_propagation"}) {
    PlanRun run = runPlan(dir, "graph: m.onnx\nparallel: {device_num: 4, search_mode: " + mode +
                                   "}\nmodules:\n  \"*.fc1\": colwise\n  mlp.fc2: RowwiseParallel\n");
    REQUIRE_MESSAGE(run.exitCode == 0, run.errors);
    CHECK(run.collectives == std::map<std::string, int>{{"AllReduce", 1}});
    CHECK(runIrc({"verify", dir.path() + "/plan.yaml"}).exitCode == 0);
  }
  // The layouts, in MindSpore's and DTensor's words: fc1's weight split on its out features.
  json report = json::parse(runIrc({dir.path() + "/plan.yaml", "--report", "-", "-q"}).out);
  CHECK(report["ops"][0]["module"] == "m.mlp.fc1");
  CHECK(report["ops"][0]["inputs"][1]["placements"] == json({"Shard(1)"}));
  CHECK(report["ops"][3]["inputs"][0]["placements"] == json({"Shard(2)"}));
  // output_layouts other than the style's default: rowwise to Shard(1) reduce-scatters.
  PlanRun scattered = runPlan(dir,
                              "graph: m.onnx\nparallel: {mesh: {tp: 4}}\nmodules:\n  \"*.fc1\": colwise\n"
                              "  \"*.fc2\": {style: rowwise, output_layouts: [Shard(1)]}\n");
  REQUIRE_MESSAGE(scattered.exitCode == 0, scattered.errors);
  CHECK(scattered.collectives == std::map<std::string, int>{{"ReduceScatter", 1}});
  // Partial(): the rowwise product stays unreduced; the bias Add's edge reduces it.
  PlanRun partial = runPlan(dir,
                            "graph: m.onnx\nparallel: {mesh: {tp: 4}, search_mode: factor_propagation}\nmodules:\n"
                            "  \"*.fc1\": colwise\n  \"*.fc2\": {style: rowwise, output_layouts: Partial()}\n");
  REQUIRE_MESSAGE(partial.exitCode == 0, partial.errors);
  CHECK(partial.collectives == std::map<std::string, int>{{"AllReduce", 1}});
  json kept = json::parse(readFile(dir.path() + "/r.json"));
  CHECK(kept["ops"][3]["forward_ops"].empty());
  CHECK(kept["ops"][3]["outputs"][0]["placements"] == json({"Partial(sum)"}));
  CHECK(runIrc({"verify", dir.path() + "/plan.yaml"}).exitCode == 0);
  // A 2-D mesh: the style's axis is tp, the other axis splits the batch.
  PlanRun twoD = runPlan(dir,
                         "graph: m.onnx\nparallel: {mesh: {dp: 2, tp: 2}}\nmodules:\n"
                         "  \"*.fc1\": {style: colwise, axis: tp}\n  \"*.fc2\": {style: rowwise, axis: tp}\n");
  REQUIRE_MESSAGE(twoD.exitCode == 0, twoD.errors);
  CHECK(twoD.collectives == std::map<std::string, int>{{"AllReduce", 1}});
}

TEST_CASE("--torch-out: a module output irc converts once is DTensor's PrepareModuleOutput; split logits, loss_parallel") {
  // A sequence-parallel norm read by two colwise Linears (q and k), their sum by a rowwise o,
  // whose output a colwise head splits on the vocabulary and hands out of the model.
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{8}, int64_t{16}});
  m.floats("norm.weight", {16}, std::vector<float>(16, 1.0f));
  for (std::string name : {"q", "k", "o", "head"}) m.floats(name + ".weight", {16, 16}, std::vector<float>(256, 0.1f));
  m.node("Mul", {"x", "norm.weight"}, {"n"}, "/m/norm/Mul");
  m.node("MatMul", {"n", "q.weight"}, {"q"}, "/m/q/MatMul");
  m.node("MatMul", {"n", "k.weight"}, {"k"}, "/m/k/MatMul");
  m.node("Add", {"q", "k"}, {"qk"}, "/m/Add");
  m.node("MatMul", {"qk", "o.weight"}, {"o"}, "/m/o/MatMul");
  m.node("MatMul", {"o", "head.weight"}, {"logits"}, "/m/head/MatMul");
  m.output("logits");
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", m.bytes());
  std::string modules =
      "modules:\n  m.norm: sequence_parallel\n  \"*.q\": {style: colwise, input_layouts: Shard(1)}\n"
      "  \"*.k\": {style: colwise, input_layouts: Shard(1)}\n  \"*.o\": rowwise\n  m.head: colwise\n";
  // The input arrives in sequence shards, as a sequence-parallel norm takes it (DTensor's
  // SequenceParallel reads its local input as Shard(1)).
  modules += "sharding:\n  x: {placements: [Shard(1)]}\n";
  auto torchOut = [&](const std::string& mode) {
    writeFile(dir.path() + "/plan.yaml", "graph: m.onnx\nparallel: {mesh: {tp: 2}, search_mode: " + mode + "}\n" + modules);
    RunResult r = runIrc({dir.path() + "/plan.yaml", "--torch-out", dir.path() + "/tp.py", "-q"});
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    return readFile(dir.path() + "/tp.py");
  };
  // Factor propagation gathers the norm's output once for q and k: DTensor's hook on the norm,
  // handing the Linears a replicated DTensor (their Shard(1) input_layouts then move nothing).
  std::string once = torchOut("factor_propagation");
  CHECK_MESSAGE(once.find("#   collectives: 1 AllReduce, 1 AllGather\n") != std::string::npos, once);
  CHECK(once.find("        \"m.norm\": PrepareModuleOutput(output_layouts=Shard(1), desired_output_layouts=Replicate(), "
                  "use_local_output=False),\n") != std::string::npos);
  // Sharding propagation gathers on each Linear's edge, as the styles alone do: no hook.
  std::string each = torchOut("sharding_propagation");
  CHECK_MESSAGE(each.find("#   collectives: 1 AllReduce, 2 AllGather\n") != std::string::npos, each);
  CHECK(each.find("PrepareModuleOutput(output_layouts") == std::string::npos);
  // The head's vocabulary-split logits leave the model: a DTensor for loss_parallel.
  for (const std::string& text : {once, each}) {
    CHECK(text.find("        \"m.head\": ColwiseParallel(use_local_output=False),\n") != std::string::npos);
    CHECK(text.find("LOSS_PARALLEL = [\"m.head\"]\n") != std::string::npos);
  }
}

TEST_CASE("plan modules: OPT's attention on merged batch and heads runs Megatron's one AllReduce, as DTensor") {
  // OPT's eager attention: q, k, v Linear -> [b, s, h, d] -> [b, h, s, d] -> [b*h, s, d], bmm,
  // softmax, bmm, back to [b, h, s, d] -> [b, s, h*d], out_proj. Before the import unmerged it,
  // the head split needed 3 AllGathers per mode (q, k and v gathered on the merged dim).
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{8}, int64_t{16}});
  m.ints("heads", {4}, {2, 8, 4, 4});
  m.ints("merged", {3}, {8, 8, 4});
  m.ints("unmerged", {4}, {2, 4, 8, 4});
  m.ints("hidden", {3}, {2, 8, 16});
  auto perm = [](onnx::NodeProto* n, const std::vector<int64_t>& p) { OnnxModel::intsAttr(n, "perm", p); };
  auto linear = [&](const std::string& name, const std::string& in) {
    std::vector<float> w(256);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(std::sin(static_cast<double>(i + name.size())) * 0.2);
    m.floats(name + ".weight", {16, 16}, w);
    m.floats(name + ".bias", {16}, std::vector<float>(16, 0.1f));
    m.node("MatMul", {in, name + ".weight"}, {name + "_mm"}, "/m/self_attn/" + name + "/MatMul");
    m.node("Add", {name + "_mm", name + ".bias"}, {name}, "/m/self_attn/" + name + "/Add");
  };
  for (std::string t : {"q_proj", "k_proj", "v_proj"}) {
    linear(t, "x");
    m.node("Reshape", {t, "heads"}, {t + "4"}, "/m/self_attn/Reshape_" + t);
    perm(m.node("Transpose", {t + "4"}, {t + "t"}, "/m/self_attn/Transpose_" + t), {0, 2, 1, 3});
    m.node("Reshape", {t + "t", "merged"}, {t + "3"}, "/m/self_attn/Merge_" + t);
  }
  perm(m.node("Transpose", {"k_proj3"}, {"kt"}, "/m/self_attn/Transpose"), {0, 2, 1});
  m.node("MatMul", {"q_proj3", "kt"}, {"scores"}, "/m/self_attn/MatMul");
  OnnxModel::intAttr(m.node("Softmax", {"scores"}, {"probs"}, "/m/self_attn/Softmax"), "axis", -1);
  m.node("MatMul", {"probs", "v_proj3"}, {"context"}, "/m/self_attn/MatMul_1");
  m.node("Reshape", {"context", "unmerged"}, {"context4"}, "/m/self_attn/Reshape_back");
  perm(m.node("Transpose", {"context4"}, {"context_t"}, "/m/self_attn/Transpose_1"), {0, 2, 1, 3});
  m.node("Reshape", {"context_t", "hidden"}, {"attn"}, "/m/self_attn/Reshape_out");
  linear("out_proj", "attn");
  m.output("out_proj");
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", m.bytes());
  for (std::string mode : {"sharding_propagation", "factor_propagation"}) {
    PlanRun run = runPlan(dir, "graph: m.onnx\nparallel: {device_num: 2, search_mode: " + mode +
                                   "}\nmodules:\n  \"*.q_proj\": colwise\n  \"*.k_proj\": colwise\n  \"*.v_proj\": colwise\n"
                                   "  \"*.out_proj\": rowwise\n");
    REQUIRE_MESSAGE(run.exitCode == 0, run.errors);
    CHECK_MESSAGE((run.collectives == std::map<std::string, int>{{"AllReduce", 1}}), mode);
    CHECK(runIrc({"verify", dir.path() + "/plan.yaml"}).exitCode == 0);
  }
}

TEST_CASE("onnx trainable: module paths train unless torch names them buffers; renamed constants train where read as weights") {
  // x [2, 4, 8] -> MatMul m.fc.weight -> h -> Mul m.rotary.inv_freq (a buffer by its name) -> r
  // -> Add mask (an exporter's name, 2-D: a mask) -> a -> Add val_3 (a bias: a vector along the
  // last dim) -> b -> MatMul val_7 (a renamed weight: a MatMul's operand) -> y. Each activation
  // [2, 4, 8] float32 = 256 B.
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{4}, int64_t{8}});
  m.floats("m.fc.weight", {8, 8}, std::vector<float>(64, 0.1f));
  m.floats("m.rotary.inv_freq", {8}, std::vector<float>(8, 0.5f));
  m.floats("mask", {1, 4, 8}, std::vector<float>(32, 0.0f));
  m.floats("val_3", {8}, std::vector<float>(8, 0.2f));
  m.floats("val_7", {8, 8}, std::vector<float>(64, 0.3f));
  m.node("MatMul", {"x", "m.fc.weight"}, {"h"}, "/m/fc/MatMul");
  m.node("Mul", {"h", "m.rotary.inv_freq"}, {"r"}, "/m/Mul");
  m.node("Add", {"r", "mask"}, {"a"}, "/m/Add");
  m.node("Add", {"a", "val_3"}, {"b"}, "/m/Add_1");
  m.node("MatMul", {"b", "val_7"}, {"y"}, "/m/out/MatMul");
  m.output("y");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  std::map<std::string, bool> trains;
  for (ValueId v : l.graph->graph.parameters) trains[l.graph->graph.value(v).name] = l.graph->graph.value(v).trainable;
  CHECK(trains == std::map<std::string, bool>{
                      {"m.fc.weight", true}, {"m.rotary.inv_freq", false}, {"mask", false}, {"val_3", true}, {"val_7", true}});
  // Parameters 64 + 8 + 64 elements = 544 B; constants 8 + 32 = 160 B. Saved for backward: x
  // (the first MatMul's, for its weight's gradient), b (the second's) and the loss's
  // log-softmax of y: 768 B. h is not kept: its partner inv_freq takes no gradient, so torch's
  // Mul keeps nothing of it (it kept h when every constant trained: 1024 B). Gradients 544 B,
  // AdamW's two float32 moments 1088 B.
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", m.bytes());
  writeFile(dir.path() + "/plan.yaml", "graph: m.onnx\nparallel: {device_num: 1, training: true}\n");
  RunResult r = runIrc({dir.path() + "/plan.yaml", "--report", "-", "-q"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  json t = json::parse(r.out)["memory"]["training"];
  CHECK(t["parameters_bytes"] == 544);
  CHECK(t["constants_bytes"] == 160);
  CHECK(t["saved_activations_bytes"] == 768);
  CHECK(t["gradients_bytes"] == 544);
  CHECK(t["optimizer_states_bytes"] == 1088);
  CHECK(json::parse(r.out)["memory"]["inference"]["constants_bytes"] == 160);
  // Data parallel over 2 in training: the three trained parameters' gradients are averaged
  // (a _MirrorOperator each); the buffer and the mask take none, as torch's DDP all-reduces
  // parameters' gradients only.
  writeFile(dir.path() + "/plan.yaml", "graph: m.onnx\nparallel: {device_num: 2, training: true, search_mode: data_parallel}\n");
  RunResult dp = runIrc({dir.path() + "/plan.yaml", "--dump-after", "validate", "--dump-dir", dir.path() + "/ir", "-q"});
  REQUIRE_MESSAGE(dp.exitCode == 0, dp.err);
  std::string dump = readFile(dir.path() + "/ir/rank_0/validate_0004.ir");
  std::vector<std::string> mirrored;
  for (size_t at = dump.find("= _MirrorOperator(%"); at != std::string::npos; at = dump.find("= _MirrorOperator(%", at + 1)) {
    size_t name = dump.find('_', dump.find("%para", at)) + 1;
    mirrored.push_back(dump.substr(name, dump.find(')', name) - name));
  }
  std::sort(mirrored.begin(), mirrored.end());
  CHECK(mirrored == std::vector<std::string>{"m.fc.weight", "val_3", "val_7"});
}

TEST_CASE("plan recompute: module globs (a module and what it encloses) and node names; a glob matching nothing is an error") {
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", twoLinears().bytes());
  writeFile(dir.path() + "/plan.yaml", "graph: m.onnx\nparallel: {device_num: 1, training: true}\nrecompute: [\"*.mlp\"]\n");
  RunResult r = runIrc({dir.path() + "/plan.yaml", "--report", "-", "-q"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(json::parse(r.out)["memory"]["training"]["recomputed_ops"] == 5);  // every op is under m.mlp
  writeFile(dir.path() + "/plan.yaml",
            "graph: m.onnx\nparallel: {device_num: 1, training: true}\nrecompute: [/m/mlp/act/Relu]\n");
  CHECK(json::parse(runIrc({dir.path() + "/plan.yaml", "--report", "-", "-q"}).out)["memory"]["training"]["recomputed_ops"] == 1);
  writeFile(dir.path() + "/plan.yaml", "graph: m.onnx\nparallel: {device_num: 1}\nrecompute: [\"*.attn\"]\n");
  RunResult bad = runIrc({dir.path() + "/plan.yaml"});
  CHECK(bad.exitCode == 1);
  CHECK(bad.err.find("plan.yaml:3:13: error: recompute entry '*.attn' matches no module or node of the graph") !=
        std::string::npos);
}

TEST_CASE(
    "plan recompute: a module glob is one checkpoint per module instance, each keeping its input (torch's per-layer "
    "checkpoints)") {
  // examples/gpt2.onnx (2 layers, hidden 32, input [4, 8]): `transformer.h.*` checkpoints h.0 and
  // h.1 each, so h.1's input, the [4, 8, 32] float32 residual stream (4096 bytes), is kept too;
  // node-name globs over the same ops are one checkpoint, which keeps only what enters h.0.
  auto saved = [](const std::string& glob) {
    TempDir dir;
    writeFile(dir.path() + "/plan.yaml", "graph: " + sourceDir() +
                                             "/examples/gpt2.onnx\ndims: {batch: 4, sequence: 8}\n"
                                             "parallel: {device_num: 1, training: true}\nrecompute: [\"" +
                                             glob + "\"]\n");
    RunResult r = runIrc({dir.path() + "/plan.yaml", "--report", "-", "-q"});
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    json training = json::parse(r.out)["memory"]["training"];
    CHECK(training["recomputed_ops"] == 86);
    return training["saved_activations_bytes"].get<double>();
  };
  CHECK(saved("transformer.h.*") - saved("/transformer/h.*") == 4 * 8 * 32 * 4);
}

TEST_CASE("plan modules: ops no style names run as DTensor runs them; unlisted: propagate lets propagation fill them") {
  // An MLP-only plan on examples/gpt2.onnx at TP 2 under sharding_propagation: DTensor runs one
  // AllReduce per layer (c_proj) and nothing else; attention and lm_head read replicated tensors
  // and stay replicated. Propagation alone split attention and gathered it back.
  TempDir dir;
  std::string plan = "graph: " + sourceDir() +
                     "/examples/gpt2.onnx\ndims: {batch: 4, sequence: 8}\n"
                     "parallel: {device_num: 2, search_mode: sharding_propagation}\n"
                     "modules:\n  \"*.mlp.c_fc\": colwise\n  \"*.mlp.c_proj\": rowwise\n";
  PlanRun dtensor = runPlan(dir, plan);
  REQUIRE_MESSAGE(dtensor.exitCode == 0, dtensor.errors);
  CHECK(dtensor.collectives == std::map<std::string, int>{{"AllReduce", 2}});
  json report = json::parse(readFile(dir.path() + "/r.json"));
  int heads = 0;
  for (const json& op : report["ops"])
    if (op["module"] == "lm_head") {
      ++heads;
      CHECK(op["outputs"][0]["tensor_map"] == json({-1, -1, -1}));
    }
  CHECK(heads == 1);
  CHECK(runIrc({"verify", dir.path() + "/plan.yaml"}).exitCode == 0);
  PlanRun propagated = runPlan(dir, plan + "unlisted: propagate\n");
  REQUIRE_MESSAGE(propagated.exitCode == 0, propagated.errors);
  CHECK(propagated.collectives.count("AllGather") == 1);
}

TEST_CASE(
    "onnx: Pad becomes Pad with (before, after) pairs; over axes (opset 18); reflect keeps its mode; unknown modes are errors") {
  OnnxModel m;
  m.model.mutable_opset_import(0)->set_version(18);
  m.input("x", {int64_t{2}, int64_t{3}, int64_t{4}});
  m.ints("pads", {4}, {1, 0, 2, 3});  // axes (2, 0): dim 2 gets 1 before and 2 after, dim 0 0 and 3
  m.ints("axes", {2}, {2, 0});
  m.floats("v", {}, {0.5f});
  m.node("Pad", {"x", "pads", "v", "axes"}, {"out"}, "/pad/Pad");
  m.output("out");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Op& pad = l.graph->graph.op(l.graph->graph.order[0]);
  CHECK(pad.type == "Pad");
  CHECK(asTuple(pad.attrs.at("paddings")) == IntTuple{0, 3, 0, 0, 1, 2});
  CHECK(std::get<double>(pad.attrs.at("value")) == 0.5);
  CHECK(l.graph->graph.value(pad.results[0]).type.shape == Shape{5, 3, 7});
  OnnxModel reflect;
  reflect.input("x", {int64_t{2}, int64_t{3}});
  reflect.ints("pads", {4}, {0, 1, 0, 1});
  auto* n = reflect.node("Pad", {"x", "pads"}, {"out"}, "/pad/Pad");
  auto* mode = n->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("reflect");
  reflect.output("out");
  Loaded lr = load(reflect.bytes());
  REQUIRE_MESSAGE(lr.graph, lr.errors);
  const Op& mirrored = lr.graph->graph.op(lr.graph->graph.order[0]);
  CHECK(std::get<std::string>(mirrored.attrs.at("mode")) == "reflect");
  CHECK(asTuple(mirrored.attrs.at("paddings")) == IntTuple{0, 0, 1, 1});
  mode->set_s("symmetric");
  CHECK(load(reflect.bytes()).errors.find("pads in mode 'symmetric'; valid: constant, reflect, edge, wrap") != std::string::npos);
}

TEST_CASE("plan modules: bad keys, styles, placements and meshes are located errors") {
  TempDir dir;
  writeFile(dir.path() + "/m.onnx", twoLinears().bytes());
  auto errorsOf = [&](const std::string& rest) {
    PlanRun run = runPlan(dir, "graph: m.onnx\n" + rest);
    CHECK_MESSAGE(run.exitCode == 1, run.errors);
    return run.errors;
  };
  CHECK(errorsOf("parallel: {device_num: 2}\nmodules:\n  \"*.fc3\": colwise\n")
            .find("plan.yaml:4:3: error: modules key '*.fc3' matches no module of the graph; closest: 'm.mlp.fc1'") !=
        std::string::npos);
  CHECK(errorsOf("parallel: {device_num: 2}\nmodules:\n  \"*.fc1\": colwize\n")
            .find("'colwize' is not a parallel style; valid: colwise, rowwise, sequence_parallel, replicate; did you mean "
                  "'colwise'?") != std::string::npos);
  CHECK(errorsOf("parallel: {device_num: 2}\nmodules:\n  \"*.act\": colwise\n")
            .find("matches module 'm.mlp.act', which is not a Linear") != std::string::npos);
  CHECK(errorsOf("parallel: {device_num: 2}\nmodules:\n  \"*.fc1\": colwise\nstrategies:\n  /m/mlp/fc1/MatMul: {in_strategy: "
                 "[[1, 1, 1], [1, 2]]}\n")
            .find("node '/m/mlp/fc1/MatMul' is matched by both '*.fc1' and '/m/mlp/fc1/MatMul'") != std::string::npos);
  CHECK(errorsOf("parallel: {device_num: 2}\nmodules:\n  \"*.fc1\": colwise\n  \"mlp.*1\": rowwise\n")
            .find("module 'm.mlp.fc1' is matched by '*.fc1' and 'mlp.*1' with different styles") != std::string::npos);
  CHECK(errorsOf("parallel: {device_num: 2}\nmodules:\n  \"*.fc1\": {style: colwise, output_layouts: [Shard(x)]}\n")
            .find("output_layouts of '*.fc1' must be one DTensor placement") != std::string::npos);
  CHECK(errorsOf("parallel: {device_num: 2}\nmodules:\n  \"*.fc1\": {style: colwise, output_layouts: Partial()}\n")
            .find("output_layouts Partial() keeps a rowwise Linear's product unreduced; colwise module computes no partial") !=
        std::string::npos);
  // input_layouts' Shard(d) names a dim of the module's input (Shard(9) of a 3-D input was copied
  // into --torch-out's code), said once for the key.
  std::string shard9 = errorsOf("parallel: {device_num: 2}\nmodules:\n  \"*.fc*\": {style: colwise, input_layouts: Shard(9)}\n");
  CHECK(shard9.find("'*.fc*': input_layouts Shard(9) is not a dim of the module's input (4, 8, 16) (valid: -3 .. 2)") !=
        std::string::npos);
  CHECK(shard9.find("error:") == shard9.rfind("error:"));
  CHECK(errorsOf("parallel: {mesh: {dp: 2, tp: 2}}\nmodules:\n  \"*.fc1\": {style: colwise, axis: pp}\n")
            .find("axis 'pp' is not an axis of the mesh (dp, tp)") != std::string::npos);
  CHECK(errorsOf("parallel: {mesh: {tp: 3}}\nmodules:\n  \"*.fc2\": rowwise\n")
            .find("rowwise splits dim 2 of 'h3' (size 32) 3 ways, which does not divide it") != std::string::npos);
  CHECK(errorsOf("parallel: {device_num: 8, mesh: {dp: 2, tp: 2}}\n").find("device_num is 8; the mesh (2, 2) has 4 devices") !=
        std::string::npos);
  CHECK(errorsOf("parallel: {mesh: {dp: 2}, device_matrix: [2]}\n").find("'parallel' gives both mesh and device_matrix") !=
        std::string::npos);
  // A bad mesh is one error, not also a missing device_num.
  std::string badMesh = errorsOf("parallel: {mesh: {tp: 0}}\n");
  CHECK(badMesh.find("mesh.tp must be in 1 .. 2147483647; got 0") != std::string::npos);
  CHECK(badMesh.find("device_num") == std::string::npos);
}

TEST_CASE("onnx: an op irc has no op for folds where its inputs are constants; on a computed tensor it is a located error") {
  // A position table picked by a constant mask: NonZero -> Squeeze (folded) -> Gather of x.
  OnnxModel m;
  m.input("x", {int64_t{2}, int64_t{5}});
  m.ints("mask", {5}, {0, 1, 0, 1, 1});
  m.ints("axes", {1}, {0});
  m.node("NonZero", {"mask"}, {"where"}, "/nz");
  m.node("Squeeze", {"where", "axes"}, {"idx"}, "/sq");
  OnnxModel::intAttr(m.node("Gather", {"x", "idx"}, {"out"}, "/gather"), "axis", 1);
  m.output("out");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  CHECK(opTypes(l.graph->graph) == std::vector<std::string>{"Gather"});
  const Graph& g = l.graph->graph;
  CHECK(g.value(g.outputs[0]).type.shape == Shape{2, 3});
  // Xor of two constant masks folds too (a bool constant the Where reads).
  OnnxModel x;
  x.input("x", {int64_t{3}});
  auto boolMask = [&](const std::string& name, std::vector<int32_t> v) {
    auto* t = x.graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::BOOL);
    t->add_dims(3);
    for (int32_t b : v) t->add_int32_data(b);
  };
  boolMask("a", {1, 0, 1});
  boolMask("b", {1, 1, 0});
  x.floats("zero", {}, {0.0f});
  x.node("Xor", {"a", "b"}, {"c"}, "/xor");
  x.node("Where", {"c", "x", "zero"}, {"out"}, "/where");
  x.output("out");
  Loaded lx = load(x.bytes());
  REQUIRE_MESSAGE(lx.graph, lx.errors);
  CHECK(opTypes(lx.graph->graph) == std::vector<std::string>{"Select"});
  // On a computed tensor: no irc op to run it on every rank.
  OnnxModel c;
  c.input("x", {int64_t{3}});
  c.node("Tan", {"x"}, {"out"}, "/tan");
  c.output("out");
  Loaded lc = load(c.bytes());
  CHECK(!lc.graph);
  CHECK_MESSAGE(lc.errors.find("m.onnx:node 0: error: node '/tan' (Tan) reads the computed tensor 'x'; irc has no Tan op and "
                               "evaluates it only where its inputs are constants") != std::string::npos,
                lc.errors);
}

TEST_CASE("onnx: Resize by scales or sizes becomes Resize to the output shape; a scale giving no whole size is an error") {
  OnnxModel m;
  m.model.mutable_opset_import(0)->set_version(13);
  m.input("x", {int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5}});
  m.floats("scales", {4}, {1, 1, 2, 0.8f});
  auto* n = m.node("Resize", {"x", "", "scales"}, {"out"}, "/up/Resize");
  auto* mode = n->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("linear");
  m.output("out");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Op& r = l.graph->graph.op(l.graph->graph.order[0]);
  CHECK(r.type == "Resize");
  CHECK(asTuple(r.attrs.at("sizes")) == IntTuple{2, 3, 8, 4});
  CHECK(std::get<std::string>(r.attrs.at("mode")) == "linear");
  CHECK(std::get<std::string>(r.attrs.at("coordinate_transformation_mode")) == "half_pixel");
  m.graph->mutable_initializer(0)->set_float_data(3, 0.5f);  // 5 * 0.5 = 2.5 elements
  CHECK(load(m.bytes()).errors.find("scale 0.5 of dim 3 (5 elements) gives 2.5 elements; irc resizes by output over input "
                                    "size") != std::string::npos);
  OnnxModel sized;
  sized.model.mutable_opset_import(0)->set_version(18);
  sized.input("x", {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}});
  sized.ints("sizes", {2}, {6, 8});
  auto* s = sized.node("Resize", {"x", "", "", "sizes"}, {"out"}, "/up/Resize");
  auto* axes = s->add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(2);
  axes->add_ints(-1);
  sized.output("out");
  Loaded ls = load(sized.bytes());
  REQUIRE_MESSAGE(ls.graph, ls.errors);
  CHECK(asTuple(ls.graph->graph.op(ls.graph->graph.order[0]).attrs.at("sizes")) == IntTuple{1, 2, 6, 8});
}

TEST_CASE("onnx: ConvTranspose becomes ConvTranspose2D and a BiasAdd; output_shape gives the pads ONNX's way") {
  OnnxModel m;
  m.input("x", {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{3}});
  m.floats("w", {2, 4, 3, 3}, std::vector<float>(72, 0.5f));
  m.floats("b", {4}, {1, 2, 3, 4});
  auto* n = m.node("ConvTranspose", {"x", "w", "b"}, {"y"}, "/up/ConvTranspose");
  auto* strides = n->add_attribute();
  strides->set_name("strides");
  strides->set_type(onnx::AttributeProto::INTS);
  strides->add_ints(2);
  strides->add_ints(2);
  auto* shape = n->add_attribute();
  shape->set_name("output_shape");
  shape->set_type(onnx::AttributeProto::INTS);
  shape->add_ints(6);
  shape->add_ints(6);
  m.output("y");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"ConvTranspose2D", "BiasAdd"});
  // 2 * (3 - 1) + 3 = 7, 1 more than asked: the odd pad goes to the begin (NOTSET).
  CHECK(asTuple(g.op(g.order[0]).attrs.at("pads")) == IntTuple{1, 1, 0, 0});
  CHECK(g.value(g.outputs[0]).type.shape == Shape{1, 4, 6, 6});
}

TEST_CASE(
    "onnx: ReduceL2 is Mul, ReduceSum and Sqrt; OneHot wraps negative indices; DepthToSpace is Reshape, Transpose, Reshape") {
  OnnxModel m;
  m.model.mutable_opset_import(0)->set_version(18);
  m.input("x", {int64_t{2}, int64_t{8}, int64_t{3}, int64_t{3}});
  m.ints("axes", {1}, {1});
  m.node("ReduceL2", {"x", "axes"}, {"norm"}, "/norm");
  OnnxModel::intAttr(m.node("DepthToSpace", {"x"}, {"pixels"}, "/shuffle"), "blocksize", 2);
  m.output("norm");
  m.output("pixels");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  const Graph& g = l.graph->graph;
  CHECK(opTypes(g) == std::vector<std::string>{"Mul", "ReduceSum", "Sqrt", "Reshape", "Transpose", "Reshape"});
  CHECK(g.value(g.outputs[0]).type.shape == Shape{2, 1, 3, 3});
  CHECK(g.value(g.outputs[1]).type.shape == Shape{2, 2, 6, 6});
  // OneHot of constant indices [-1, 1] with depth 3 folds: -1 is class 2.
  OnnxModel h;
  h.input("x", {int64_t{2}, int64_t{3}});
  h.ints("i", {2}, {-1, 1});
  h.ints("depth", {}, {3});
  h.floats("values", {2}, {0, 1});
  h.node("OneHot", {"i", "depth", "values"}, {"hot"}, "/hot");
  h.node("Mul", {"x", "hot"}, {"out"}, "/mul");
  h.output("out");
  Loaded lh = load(h.bytes());
  REQUIRE_MESSAGE(lh.graph, lh.errors);
  CHECK(opTypes(lh.graph->graph) == std::vector<std::string>{"Mul"});
  const TensorValue& hot = lh.graph->parameterData.begin()->second;
  CHECK(hot.data == std::vector<double>{0, 0, 1, 0, 1, 0});
}

TEST_CASE("onnx: Trilu with a k computed at run time is Select over the column - row grid; it matches Triu and Tril") {
  for (int upper : {1, 0}) {
    CAPTURE(upper);
    OnnxModel m;
    m.input("x", {int64_t{2}, int64_t{3}, int64_t{4}});
    m.input("k", {}, onnx::TensorProto::INT64);
    m.graph->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar
    OnnxModel::intAttr(m.node("Trilu", {"x", "k"}, {"out"}, "/mask/Trilu"), "upper", upper);
    m.output("out");
    Loaded l = load(m.bytes());
    REQUIRE_MESSAGE(l.graph, l.errors);
    const Graph& g = l.graph->graph;
    CHECK(opTypes(g) == std::vector<std::string>{upper ? "GreaterEqual" : "LessEqual", "Select"});
    TensorValue x{{2, 3, 4}, {}};
    for (int i = 0; i < 24; ++i) x.data.push_back(i + 1);
    for (int64_t k : {-1, 0, 2}) {
      CAPTURE(k);
      std::map<ValueId, TensorValue> inputs = l.graph->parameterData;
      inputs[g.inputs[0]] = x;
      inputs[g.inputs[1]] = TensorValue{{}, {static_cast<double>(k)}};
      Op triangle;
      triangle.type = upper ? "Triu" : "Tril";
      triangle.attrs = {{"diagonal", k}};
      triangle.operands = {Operand::ofValue(0)};
      auto expected = evaluateOp(triangle, {&x}, {{DType::Float32, {2, 3, 4}}});
      CHECK(runReference(g, inputs).data == expected[0].data);
    }
  }
}

// A SIGFPE found by the ONNX node tests (test_triu_zero with a computed k): a split of a dim of
// size 0 passed every divisibility check (0 % n == 0), and unifying two layouts of it divided by 0.
TEST_CASE("an empty dim (size 0) is never split: a strategy splitting it is a located error, not a crash") {
  OnnxModel m;
  m.input("x", {int64_t{3}, int64_t{0}, int64_t{5}});
  m.input("k", {}, onnx::TensorProto::INT64);
  m.graph->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();
  m.node("Trilu", {"x", "k"}, {"out"}, "/mask/Trilu");
  m.output("out");
  Loaded l = load(m.bytes());
  REQUIRE_MESSAGE(l.graph, l.errors);
  for (int64_t ways : {1, 2}) {
    CAPTURE(ways);
    Graph g = l.graph->graph;
    ParallelConfig settings;
    settings.deviceNum = 4;
    OpId keep = g.order[0];  // GreaterEqual(offsets [0, 5], k)
    g.op(keep).annotation->inStrategy = ShardStrategy{{ways, 1}, {}};
    DiagnosticEngine diags("m.onnx", "");
    PassContext context{diags};
    CompileOptions options = optionsFromModel(settings);
    options.ranks = options.everyRank();
    RunOutcome outcome = compileWithSearch(g, options, context, {});
    if (ways == 1) {
      CHECK_MESSAGE(outcome != RunOutcome::Rejected, diags.renderToString());
    } else {
      CHECK(outcome == RunOutcome::Rejected);
      CHECK(diags.renderToString().find("2 does not divide dim 0 of '/mask/Trilu/offsets' (size 0); valid: 1") !=
            std::string::npos);
    }
  }
}

}  // namespace irc::test
