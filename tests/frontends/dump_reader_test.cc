// The typed dump reader (frontends/mindspore/parallel_facts.h, dump_values.h) against the printer:
// every example compiled, its global and rank-0 dumps printed and read back, and what the reader
// types (op types, result tensors, strategies, collective groups, parameter tensors) equal to the
// graph the printer printed.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "dumps/ir_printer.h"
#include "frontends/mindspore/dump_values.h"
#include "frontends/mindspore/parallel_facts.h"
#include "ir/device_matrix.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace irc::test::dump_reader {
namespace {

// Checks one printed graph read back; returns how many ops were compared.
int checkRoundTrip(const Graph& graph, const CompileOptions& options, const std::string& what) {
  PrintOptions print;
  print.settings = &options;
  DumpText d = readDumpText(printGraph(graph, print));
  std::map<std::string, const DumpNode*> byName;
  for (const DumpNode& n : d.nodes) byName[n.name] = &n;
  int compared = 0;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    const std::string& printed = op.printedName.empty() ? op.name : op.printedName;
    INFO(what, ": ", printed);
    REQUIRE(byName.contains(printed));
    const DumpNode& n = *byName.at(printed);
    CHECK(n.type == op.type);
    // (A model op the passes replaced in place by a sequence prints as one of its replace ops.)
    if (n.inserted) CHECK((op.inserted() || !op.printedName.empty()));
    if (op.results.size() == 1) {
      REQUIRE(n.resultTensors.size() == 1);
      REQUIRE(n.resultTensors[0].has_value());
      CHECK(*n.resultTensors[0] == graph.value(op.results[0]).type);
    }
    for (size_t i = 0; i < op.operands.size() && i < n.operandTensors.size(); ++i)
      if (op.operands[i].isValue() && n.operandTensors[i]) CHECK(*n.operandTensors[i] == graph.value(op.operands[i].value).type);
    if (op.attrs.contains("group_ranks"))
      CHECK(groupRanksText(n.groupRanks) == std::get<std::string>(op.attrs.at("group_ranks")));
    // The strategy the op runs with (type line), read whole; a configured one as the node line gives it.
    if (!attrValueOf(n.layoutAttrs, "in_strategy").empty()) CHECK(n.inStrategy.has_value());
    if (std::as_const(op).annotation->inStrategy)
      CHECK(dumpStrategy(attrValueOf(n.attrs, "in_strategy")) == *std::as_const(op).annotation->inStrategy);
    ++compared;
  }
  for (const DumpParam& p : d.params) {
    INFO(what, ": parameter ", p.name);
    REQUIRE(p.tensor.has_value());
    bool found = false;
    for (ValueId v : graph.parameters)
      if (graph.value(v).name == p.name) {
        CHECK(*p.tensor == graph.value(v).type);
        found = true;
      }
    for (ValueId v : graph.inputs)
      if (graph.value(v).name == p.name) {
        CHECK(*p.tensor == graph.value(v).type);
        found = true;
      }
    CHECK(found);
  }
  return compared;
}

}  // namespace

TEST_CASE("the dump reader reads back every example's dumps as the printer wrote them, typed") {
  namespace fs = std::filesystem;
  int models = 0, ops = 0;
  for (const std::string dir : {sourceDir() + "/examples", sourceDir() + "/tests/models"}) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      Compiled c = compileAllRanks(readFile(file.string()), std::nullopt, nullptr, std::nullopt, dir);
      REQUIRE_MESSAGE(c.errors.empty(), file.string(), ": ", c.errors);
      ++models;
      ops += checkRoundTrip(c.global, c.options, file.filename().string() + " (global)");
      REQUIRE(c.locals.contains(0));
      ops += checkRoundTrip(c.locals.at(0), c.options, file.filename().string() + " (rank 0)");
    }
  }
  MESSAGE(models, " models, ", ops, " ops read back");
  CHECK(models >= 17);
}

TEST_CASE("the dump reader's values: both MindSpore spellings, typed") {
  CHECK(dumpInt("I64(3)") == 3);
  CHECK(dumpInt(" 7 ") == 7);
  CHECK_FALSE(dumpInt("3x").has_value());
  CHECK(dumpIntTuple("(1, 2)") == IntTuple{1, 2});
  CHECK(dumpIntTuple("[I64(4)]") == IntTuple{4});
  CHECK(dumpStrategy("((2, 1), (1, 4))") == ShardStrategy{{2, 1}, {1, 4}});
  CHECK(dumpTensorType("<Tensor[Float32], (64, 32)>") == TensorType{DType::Float32, {64, 32}});
  CHECK(dumpTensorType("<Ref[Tensor(F32)], (64)>") == TensorType{DType::Float32, {64}});
  CHECK(dumpTensorType("<Tensor[BFloat16], ()>") == TensorType{DType::BFloat16, {}});
  CHECK_FALSE(dumpTensorType("<Tuple[Tensor[Float32]*2], TupleShape((8), (8))>").has_value());
  CHECK(dumpParamName("%para3_layers.0.w") == "layers.0.w");
  CHECK(dumpParamName("$(@graph:para2_x)") == "x");
  // A node's typed fields, from one 1.x-style node with its type line and comments.
  DumpText d = readDumpText(
      "  %4(ar) = AllReduce(%3) {instance name: forward_op_1} primitive_attrs: {group_ranks: 0-2-4-6, op: sum}\n"
      " {in_strategy: ((2, 4)), device_matrix: (2, 4)}      : (<Tensor[Float32], (8, 16)>) -> (<Tensor[Float32], (8, 16)>)\n"
      "      # strategy: propagated from mm\n      # reason: mm's output is partial\n");
  REQUIRE(d.nodes.size() == 1);
  const DumpNode& n = d.nodes[0];
  CHECK(n.inserted);
  CHECK(n.groupRanks == std::vector<int64_t>{0, 2, 4, 6});
  CHECK(n.layoutStrategy == "((2, 4))");
  CHECK(n.operands == std::vector<std::string>{"%3"});
  CHECK(n.operandTensors.at(0) == TensorType{DType::Float32, {8, 16}});
  CHECK(n.origin == "propagated from mm");
  CHECK(n.reason == "mm's output is partial");
  CHECK(readDumpText("# Attrs:\ndevice_num: 8\n\n").headerAttr("device_num") == "8");
}

}  // namespace irc::test::dump_reader
