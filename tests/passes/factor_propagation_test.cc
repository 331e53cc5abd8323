// Factor propagation on graphs (issue 12): configured ops as sources on both sides, aggressive
// against basic, grown annotations, one conversion after a disagreeing op, cross-factor clashes
// and user priorities. Each expectation is derived in its comment from spec §6; every model also
// verifies (tests/models/factor_*.yaml join the all-modes verify test).
#include <doctest/doctest.h>

#include "dumps/ir_printer.h"
#include "dumps/report.h"
#include "ir/layout_notation.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"
#include "ops/op_sharding.h"

namespace irc::test::factor_propagation_cases {
namespace {

const Op& opNamed(const Graph& g, const std::string& name) { return g.op(g.value(*g.findValue(name)).producer); }
std::string strategyOf(const Compiled& c, const std::string& name) { return formatStrategy(strategyOf(opNamed(c.global, name))); }
std::string computed(const Compiled& c, const std::string& name) {
  return printAliasLayout(opNamed(c.global, name).parallel->outputLayouts[0]);
}

Compiled compiled(const std::string& yaml) {
  Compiled c = compileAllRanks(yaml, SearchMode::FactorPropagation);
  INFO(c.errors);
  REQUIRE(c.errors.empty());
  CHECK(verifyCompiled(c).ok);
  return c;
}

std::string model(const std::string& file, const std::string& strategy = "aggressive") {
  std::string text = readFile(sourceDir() + "/tests/models/" + file);
  text.replace(text.find("search_mode: factor_propagation"), 31, "search_mode: factor_propagation, factor_strategy: " + strategy);
  return text;
}

// Inserted ops of the global graph, as "name = Type".
std::vector<std::string> inserted(const Compiled& c) {
  std::vector<std::string> out;
  for (OpId id : c.global.order)
    if (c.global.op(id).inserted() && c.global.op(id).type != "TupleGetItem" && c.global.op(id).type != "MakeTuple")
      out.push_back(c.global.op(id).name + " = " + c.global.op(id).type);
  return out;
}

}  // namespace

TEST_CASE("a configured op is a source on both sides: the FFN propagates past MatMul 1") {
  // matmul's in_strategy ((2, 1), (1, 4)) fixes x, dense1.weight and, through the rule, its
  // result (2, 4). add and relu take (2, 4) elementwise; matmul2's lhs brings k = mp, so its
  // weight takes (4, 1) and its result is partial over mp: one AllReduce, no AllGather.
  Compiled c = compiled(readFile(sourceDir() + "/examples/ffn.yaml"));
  CHECK(strategyOf(c, "add") == "((2, 4), (4))");
  CHECK(strategyOf(c, "relu") == "((2, 4))");
  CHECK(strategyOf(c, "matmul2") == "((2, 4), (4, 1))");
  CHECK(inserted(c) == std::vector<std::string>{"matmul2.forward_op.0 = AllReduce"});

  // The same sharding written as tensor annotations gives the same strategies and inserted ops.
  std::string annotated = readFile(sourceDir() + "/examples/ffn.yaml");
  const std::string mode = "  search_mode: sharding_propagation";
  annotated.replace(annotated.find(mode), mode.size(),
                    "  search_mode: factor_propagation\n  device_matrix: [2, 4]\n  alias_name: [dp, mp]");
  annotated.replace(annotated.find("dtype: float32}"), 15, "dtype: float32, sharding: {layout: [dp, None]}}");
  annotated.replace(annotated.find("{name: dense1.weight, shape: [64, 64], dtype: float32}"), 54,
                    "{name: dense1.weight, shape: [64, 64], dtype: float32, sharding: {layout: [None, mp]}}");
  annotated.replace(annotated.find(", in_strategy: [[2, 1], [1, 4]]"), 31, "");
  Compiled a = compiled(annotated);
  for (std::string op : {"matmul", "add", "relu", "matmul2", "add2"}) {
    CAPTURE(op);
    CHECK(strategyOf(a, op) == strategyOf(c, op));
    CHECK(opNamed(a.global, op).parallel->outputLayouts[0].sameAs(opNamed(c.global, op).parallel->outputLayouts[0]));
  }
  CHECK(strategyOf(a, "matmul2") == "((2, 4), (4, 1))");
  CHECK(inserted(a) == inserted(c));
}

TEST_CASE("two annotated inputs disagreeing on an Add: aggressive and basic differ") {
  // x holds dp on dim 0, y holds dp on dim 1 (both closed). Basic: each factor's dp is used by
  // the other factor in some tensor, so s stays whole; the Add still computes in (dp, None) (x
  // carries i first) and converts its result once, for both consumers. Aggressive: i goes
  // first (equal sources, x has the lower index), s takes dp on i: nothing to convert.
  Compiled basic = compiled(model("factor_add_disagree.yaml", "basic"));
  CHECK(computed(basic, "s") == "(dp, None)");
  CHECK(printAliasLayout(*basic.global.value(opNamed(basic.global, "s").results[0]).layout) == "(None, None)");
  std::vector<std::string> basicOps = inserted(basic);
  CHECK(std::count(basicOps.begin(), basicOps.end(), "s.forward_op.0 = AllGather") == 1);  // one conversion, not one per consumer
  CHECK(std::none_of(basicOps.begin(), basicOps.end(),
                     [](const std::string& s) { return s.rfind("u.", 0) == 0 || s.rfind("v.", 0) == 0; }));
  Compiled aggressive = compiled(model("factor_add_disagree.yaml"));
  CHECK(printAliasLayout(*aggressive.global.value(opNamed(aggressive.global, "s").results[0]).layout) == "(dp, None)");
  CHECK(strategyOf(aggressive, "u") == "((2, 1))");
  for (const std::string& op : inserted(aggressive)) CHECK(op.rfind("s.in1.", 0) == 0);  // only y is moved
}

TEST_CASE("an output sharding with an open dim grows, and every later stage shows it grown") {
  // x is (dp, mp); r's constraint is (dp, None) with dim 1 open: mp flows into it.
  Compiled c = compiled(model("factor_grown_constraint.yaml"));
  CHECK(printAliasLayout(*c.global.value(opNamed(c.global, "r").results[0]).layout) == "(dp, mp)");
  CHECK(inserted(c).empty());
  auto report = buildReport(c.global, c.options, 0);
  for (const auto& v : report["values"])
    if (v["name"] == "r") CHECK(v["tensor_map"].dump() == "[1,0]");
}

TEST_CASE("a dot whose lhs and rhs carry one axis on different factors") {
  // x (4 x 8, 32 elements) holds dp on i, w (8 x 64, 512) holds dp on k. Aggressive: k goes
  // first (the larger source) but x is closed; then y takes dp on i. Read-off ranks all
  // candidates together: k carries 512, i carries 32 + 256 = 288, so k wins and i gets nothing
  // (dp is taken): x is redistributed, y is partial (AllReduce) and converted to its fixed point.
  Compiled c = compiled(model("factor_dot_clash.yaml"));
  CHECK(strategyOf(c, "y") == "((1, 2), (2, 1))");
  CHECK(inserted(c) == std::vector<std::string>{"y.in0.redistribution_op.0 = AllGather",
                                                "y.in0.redistribution_op.1 = StridedSlice", "y.forward_op.0 = AllReduce",
                                                "y.forward_op.1 = StridedSlice"});
}

TEST_CASE("a priority-1 annotation is not overwritten by priority-0 propagation") {
  // x is (dp, None) at p0; r's constraint (None, mp) at p1 is frozen while p0 runs, so dp never
  // enters it. The ReLU computes in (dp, mp) and converts to (None, mp) right after.
  Compiled c = compiled(model("factor_priority_kept.yaml"));
  CHECK(printAliasLayout(*c.global.value(opNamed(c.global, "r").results[0]).layout) == "(None, mp)");
  CHECK(computed(c, "r") == "(dp, mp)");
  CHECK(inserted(c) == std::vector<std::string>{"r.in0.redistribution_op.0 = StridedSlice", "r.forward_op.0 = AllGather"});
}

TEST_CASE("an unannotated input is held in the layout its first consumer computes with") {
  Compiled c = compiled(readFile(sourceDir() + "/examples/ffn.yaml"));
  CHECK(printAliasLayout(*c.global.value(*c.global.findValue("dense2.weight")).layout) ==
        printAliasLayout(opNamed(c.global, "matmul2").parallel->inputLayouts[1]));
  CHECK(c.global.redistributions.empty());
}

}  // namespace irc::test::factor_propagation_cases

namespace irc::test::factor_propagation_cases {

TEST_CASE("a partial result under a constraint that splits it over the same axes is reduce-scattered, not all-reduced and cut") {
  // DTensor's RowwiseParallel with output_layouts [Shard(1)]: the contracted dim is split over
  // tp, the output is partial over tp, and the constraint wants it split on dim 1 over tp.
  // Before: AllReduce then StridedSlice (every rank received the whole sum to keep half of it).
  const std::string yaml =
      "parallel: {device_num: 2, device_matrix: [2], alias_name: [tp]}\n"
      "inputs:\n  - {name: x, shape: [2, 16, 64], dtype: float32}\n"
      "parameters:\n  - {name: w, shape: [64, 32], dtype: float32}\n"
      "ops:\n  - {name: mm, type: BatchMatMul, inputs: [x, w], in_layout: [[None, None, tp], [tp, None]],\n"
      "       sharding: {placements: ['Shard(1)']}}\n"
      "  - {name: r, type: ReLU, inputs: [mm]}\n";
  for (SearchMode mode : {SearchMode::ShardingPropagation, SearchMode::FactorPropagation}) {
    Compiled c = compileAllRanks(yaml, mode);
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    CHECK(inserted(c) ==
          std::vector<std::string>{"mm.forward_op.0 = Split", "mm.forward_op.1 = Concat", "mm.forward_op.2 = ReduceScatter"});
    CHECK(verifyCompiled(c).ok);
  }
  // Over other axes than the partial ones, the two steps stay.
  const std::string otherAxis =
      "parallel: {device_num: 4, device_matrix: [2, 2], alias_name: [dp, tp]}\n"
      "inputs:\n  - {name: x, shape: [2, 16, 64], dtype: float32}\n"
      "parameters:\n  - {name: w, shape: [64, 32], dtype: float32}\n"
      "ops:\n  - {name: mm, type: BatchMatMul, inputs: [x, w], in_layout: [[None, None, tp], [tp, None]],\n"
      "       sharding: {placements: ['Shard(1)', 'Replicate()']}}\n"
      "  - {name: r, type: ReLU, inputs: [mm]}\n";
  Compiled o = compileAllRanks(otherAxis, SearchMode::ShardingPropagation);
  REQUIRE_MESSAGE(o.errors.empty(), o.errors);
  std::vector<std::string> ops = inserted(o);
  CHECK(ops.at(0) == "mm.forward_op.0 = AllReduce");
  CHECK(ops.at(1) == "mm.forward_op.1 = StridedSlice");
  CHECK(verifyCompiled(o).ok);
}

}  // namespace irc::test::factor_propagation_cases

namespace irc::test::factor_propagation_cases {

TEST_CASE("an op's result constrained Partial() (Shardy: unreduced) stays partial until a consumer needs it whole") {
  // DTensor's RowwiseParallel(output_layouts=Partial()): no AllReduce after the MatMul; the
  // residual Add's edge reduces it. Both spellings, both propagation modes.
  for (std::string sharding : {"{placements: ['Partial()']}", "{layout: [None, None, None], unreduced: [tp]}"}) {
    const std::string yaml =
        "parallel: {device_num: 2, device_matrix: [2], alias_name: [tp]}\n"
        "inputs:\n  - {name: x, shape: [2, 16, 64], dtype: float32}\n  - {name: res, shape: [2, 16, 32], dtype: float32}\n"
        "parameters:\n  - {name: w, shape: [64, 32], dtype: float32}\n"
        "ops:\n  - {name: mm, type: BatchMatMul, inputs: [x, w], in_layout: [[None, None, tp], [tp, None]], sharding: " +
        sharding + "}\n  - {name: a, type: Add, inputs: [mm, res]}\n  - {name: r, type: ReLU, inputs: [a]}\n";
    for (SearchMode mode : {SearchMode::ShardingPropagation, SearchMode::FactorPropagation}) {
      Compiled c = compileAllRanks(yaml, mode);
      REQUIRE_MESSAGE(c.errors.empty(), c.errors);
      CHECK(inserted(c) == std::vector<std::string>{"a.in0.redistribution_op.0 = AllReduce"});
      CHECK(c.global.value(opNamed(c.global, "mm").results[0]).layout->isPartial());
      CHECK(verifyCompiled(c).ok);
    }
  }
  // Unreduced on an input is refused, as a partial input is.
  Compiled input = compileAllRanks(
      "parallel: {device_num: 2, device_matrix: [2], alias_name: [tp]}\n"
      "inputs:\n  - {name: x, shape: [2, 4], dtype: float32, sharding: {layout: [None, None], unreduced: [tp]}}\n"
      "ops:\n  - {name: r, type: ReLU, inputs: [x]}\n");
  CHECK(input.errors.find("only an op's result may be unreduced") != std::string::npos);
}

}  // namespace irc::test::factor_propagation_cases
