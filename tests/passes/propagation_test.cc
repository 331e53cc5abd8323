// Strategy propagation in every mode: what each op gets and where it came from. Every case also
// verifies (the program computes what one device does).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "dumps/ir_printer.h"
#include "dumps/origin_text.h"
#include "ir/layout_notation.h"
#include "tests/pipeline_util.h"
#include "ops/op_sharding.h"

namespace irc::test::propagation_cases {
namespace {

const Op& opNamed(const Graph& g, const std::string& name) { return g.op(g.value(*g.findValue(name)).producer); }
std::string strategyOf(const Compiled& c, const std::string& name) { return formatStrategy(strategyOf(opNamed(c.global, name))); }
const StrategyOrigin& originOf(const Compiled& c, const std::string& name) { return opNamed(c.global, name).parallel->origin; }
std::string originFrom(const Compiled& c, const std::string& name) { return originSourceName(c.global, originOf(c, name)); }
std::string originEdge(const Compiled& c, const std::string& name) {
  return originEdgeText(c.global, opNamed(c.global, name), originOf(c, name));
}

Compiled compiled(const std::string& yaml, std::optional<SearchMode> mode = std::nullopt) {
  Compiled c = compileAllRanks(yaml, mode);
  INFO(c.errors);
  REQUIRE(c.errors.empty());
  CHECK(verifyCompiled(c).ok);
  return c;
}

const char* kHeader =
    "parallel: {device_num: 8}\ninputs:\n  - {name: x, shape: [64, 64], dtype: float32}\n"
    "parameters:\n  - {name: w, shape: [64, 64], dtype: float32}\n  - {name: w2, shape: [64, 64], dtype: float32}\n";

}  // namespace

TEST_CASE("sharding propagation: a diamond takes the configured op's layout with no communication") {
  Compiled c = compiled(std::string(kHeader) +
                        "ops:\n  - {name: a, type: MatMul, inputs: [x, w], in_strategy: [[2, 1], [1, 4]]}\n"
                        "  - {name: b, type: ReLU, inputs: [a]}\n  - {name: t, type: Tanh, inputs: [a]}\n"
                        "  - {name: d, type: Add, inputs: [b, t]}\n");
  CHECK(strategyOf(c, "b") == "((2, 4))");
  CHECK(strategyOf(c, "t") == "((2, 4))");
  CHECK(strategyOf(c, "d") == "((2, 4), (2, 4))");
  CHECK(originFrom(c, "d") == "b");  // reached from b first (successors in model order)
  CHECK(c.global.redistributions.empty());
}

TEST_CASE("sharding propagation: a configured op in the middle decides its predecessors and successors") {
  Compiled c = compiled(std::string(kHeader) +
                        "ops:\n  - {name: r, type: ReLU, inputs: [x]}\n"
                        "  - {name: m, type: MatMul, inputs: [r, w], in_strategy: [[4, 2], [2, 1]]}\n"
                        "  - {name: s, type: Sigmoid, inputs: [m]}\n");
  CHECK(strategyOf(c, "r") == "((4, 2))");
  CHECK(originOf(c, "r").kind == OriginKind::Propagated);
  CHECK(originEdge(c, "r") == "r -> m");
  CHECK(originOf(c, "r").edge == StrategyOrigin::Edge::FromConsumer);
  CHECK(strategyOf(c, "s") == "((4, 2))");
  CHECK(originEdge(c, "s") == "m -> s");
  CHECK(originOf(c, "s").edge == StrategyOrigin::Edge::FromProducer);
}

TEST_CASE("sharding propagation: two configured ops that disagree get a redistribution on their edge") {
  Compiled c = compiled(std::string(kHeader) +
                        "ops:\n  - {name: a, type: MatMul, inputs: [x, w], in_strategy: [[8, 1], [1, 1]]}\n"
                        "  - {name: b, type: MatMul, inputs: [a, w2], in_strategy: [[1, 1], [1, 8]]}\n");
  REQUIRE(c.global.redistributions.size() == 1);
  const RedistributionRecord& rec = c.global.redistributions[0];
  CHECK(rec.producer == "a");
  CHECK(rec.consumer == "b");
  REQUIRE(rec.ops.size() == 1);
  CHECK(c.global.op(rec.ops[0]).type == "AllGather");
}

TEST_CASE("sharding propagation goes through Reshape and Transpose") {
  Compiled c = compiled(std::string(kHeader) +
                        "ops:\n  - {name: a, type: MatMul, inputs: [x, w], in_strategy: [[8, 1], [1, 1]]}\n"
                        "  - {name: r, type: Reshape, inputs: [a, [8, 8, 64]]}\n"
                        "  - {name: t, type: Transpose, inputs: [r, [1, 0, 2]]}\n"
                        "  - {name: e, type: Exp, inputs: [t]}\n");
  const Op& r = opNamed(c.global, "r");
  // The Reshape works on a's device matrix (8, 1, 1), where the m axis is 2 from the right.
  CHECK(formatShape(r.parallel->sharding.mesh.dims) == "(8, 1, 1)");
  CHECK(printTensorMapIndex(r.parallel->outputLayouts[0]) == "[2, -1, -1]");
  CHECK(strategyOf(c, "t") == "((8, 1, 1))");
  CHECK(strategyOf(c, "e") == "((1, 8, 1))");
  CHECK(c.global.redistributions.empty());
}

TEST_CASE("ops no configured op reaches get the data-parallel strategy, origin default") {
  Compiled c = compiled(
      "parallel: {device_num: 8}\ninputs:\n  - {name: x, shape: [64, 64], dtype: float32}\n"
      "  - {name: y, shape: [16, 4], dtype: float32}\nops:\n"
      "  - {name: a, type: ReLU, inputs: [x], in_strategy: [[2, 4]]}\n  - {name: b, type: Tanh, inputs: [y]}\n"
      "  - {name: c, type: Neg, inputs: [b]}\n");
  CHECK(strategyOf(c, "b") == "((8, 1))");
  CHECK(originOf(c, "b").kind == OriginKind::Default);
  CHECK(strategyOf(c, "c") == "((8, 1))");
}

TEST_CASE("semi_auto replicates every unconfigured op; data_parallel splits dim 0") {
  std::string yaml = std::string(kHeader) +
                     "ops:\n  - {name: a, type: MatMul, inputs: [x, w], in_strategy: [[2, 1], [1, 4]]}\n"
                     "  - {name: b, type: ReLU, inputs: [a]}\n";
  Compiled semi = compiled(yaml, SearchMode::SemiAuto);
  CHECK(strategyOf(semi, "b") == "((1, 1))");
  Compiled dp = compiled(yaml, SearchMode::DataParallel);
  CHECK(strategyOf(dp, "b") == "((8, 1))");
  CHECK(strategyOf(dp, "a") == "((2, 1), (1, 4))");  // configured ops keep theirs in every mode
}

// MindSpore's ReshapeInfo leaves the output of a Reshape no op reads at its default, replicated
// (issue 58 item 10: [32, 512, 7, 7] -> [32, 25088] under (4, 1, 1, 1) on 32 devices gives each
// rank [32, 25088], tensor map [-1, -1]); data parallelism keeps each rank's batch slice.
TEST_CASE("a Reshape whose result is only a graph output is replicated in MindSpore's modes, kept split in data_parallel") {
  auto model = [](int split) {
    return fmt::format(
        "parallel: {{device_num: 32, fully_use_devices: false}}\ninputs:\n  - {{name: x, shape: [32, 512, 7, 7], dtype: "
        "float32}}\n"
        "ops:\n  - {{name: r, type: ReLU, inputs: [x], in_strategy: [[{}, 1, 1, 1]]}}\n"
        "  - {{name: flat, type: Reshape, inputs: [r, [32, 25088]]}}\n",
        split);
  };
  auto opsOfType = [](const Graph& g, const std::string& type) {
    return std::count_if(g.order.begin(), g.order.end(), [&](OpId id) { return g.op(id).type == type; });
  };
  // Each rank's graph output (after any conversion the Reshape makes).
  auto outputOf = [](const Compiled& c, int64_t rank) {
    const Graph& local = c.locals.at(rank);
    return local.value(local.outputs.at(0)).type.shape;
  };
  for (SearchMode mode : {SearchMode::SemiAuto, SearchMode::ShardingPropagation})
    for (int split : {4, 32}) {
      CAPTURE(split);
      Compiled c = compiled(model(split), mode);
      for (int64_t rank : {0, 31}) CHECK(outputOf(c, rank) == Shape{32, 25088});
      CHECK(opsOfType(c.locals.at(0), "AllGather") == 1);  // the gather after the Reshape
    }
  Compiled dp = compiled(model(32), SearchMode::DataParallel);
  CHECK(outputOf(dp, 5) == Shape{1, 25088});
  CHECK(opsOfType(dp.locals.at(0), "AllGather") == 0);
}

TEST_CASE("factor propagation: user priorities decide a conflict") {
  auto model = [](int px, int py) {
    return "parallel: {device_num: 8, search_mode: factor_propagation, device_matrix: [2, 4], alias_name: [dp, mp]}\n"
           "inputs:\n  - {name: x, shape: [16, 8], dtype: float32, sharding: {layout: [mp, None], priority: " +
           std::to_string(px) +
           "}}\n  - {name: y, shape: [16, 8], dtype: float32, sharding: {layout: [dp, None], priority: " + std::to_string(py) +
           "}}\nops:\n  - {name: s, type: Add, inputs: [x, y]}\n  - {name: o, type: ReLU, inputs: [s]}\n";
  };
  // Equal priorities: the conflict goes to the first carrier (x, mp).
  Compiled same = compiled(model(0, 0));
  CHECK(printAliasLayout(opNamed(same.global, "s").parallel->outputLayouts[0]) == "(mp, None)");
  // y first (priority 0), x later (1): s and its consumer take y's dp, and x is redistributed.
  Compiled ordered = compiled(model(1, 0));
  CHECK(printAliasLayout(opNamed(ordered.global, "s").parallel->outputLayouts[0]) == "(dp, None)");
  CHECK(printAliasLayout(opNamed(ordered.global, "o").parallel->outputLayouts[0]) == "(dp, None)");
  REQUIRE(ordered.global.redistributions.size() == 1);
  CHECK(ordered.global.redistributions[0].producer == "x");
}

TEST_CASE("factor propagation through compound reshape factors") {
  std::string head = "parallel: {device_num: 8, search_mode: factor_propagation, device_matrix: [2, 4], alias_name: [dp, mp]}\n";
  // [2, 4] sharded {dp}{mp} reshaped to [8] gives {dp, mp} (the seed's example).
  Compiled merge = compiled(head +
                            "inputs:\n  - {name: x, shape: [2, 4], dtype: float32, sharding: {layout: [dp, mp]}}\n"
                            "ops:\n  - {name: r, type: Reshape, inputs: [x, [8]]}\n  - {name: e, type: Exp, inputs: [r]}\n");
  CHECK(printAliasLayout(opNamed(merge.global, "e").parallel->outputLayouts[0]) == "((dp, mp))");
  // And back: [8, 16] sharded {dp, mp} on dim 0 split into [2, 4, 16] gives {dp}{mp}{}.
  Compiled split =
      compiled(head +
               "inputs:\n  - {name: x, shape: [8, 16], dtype: float32, sharding: {layout: [[dp, mp], None]}}\n"
               "ops:\n  - {name: r, type: Reshape, inputs: [x, [2, 4, 16]]}\n  - {name: e, type: Exp, inputs: [r]}\n");
  CHECK(printAliasLayout(opNamed(split.global, "e").parallel->outputLayouts[0]) == "(dp, mp, None)");
  CHECK(split.global.redistributions.empty());
}

}  // namespace irc::test::propagation_cases

namespace irc::test::propagation_cases {

TEST_CASE("factor propagation: replicated axes are never used on that tensor; open dims may grow") {
  std::string head = "parallel: {device_num: 8, search_mode: factor_propagation, device_matrix: [2, 4], alias_name: [dp, mp]}\n";
  // x is split on dim 0 by dp and must never be split by mp; its consumer's weight brings mp.
  Compiled c = compiled(head +
                        "inputs:\n  - {name: x, shape: [16, 8], dtype: float32, sharding: {layout: [dp, None], open: [false, "
                        "true], replicated: [mp]}}\n"
                        "parameters:\n  - {name: w, shape: [8, 32], dtype: float32, sharding: {layout: [None, mp]}}\n"
                        "ops:\n  - {name: y, type: MatMul, inputs: [x, w]}\n  - {name: z, type: ReLU, inputs: [y]}\n");
  CHECK(printAliasLayout(*c.global.value(*c.global.findValue("x")).layout) == "(dp, None)");
  CHECK(printAliasLayout(opNamed(c.global, "z").parallel->outputLayouts[0]) == "(dp, mp)");
}

TEST_CASE("factor propagation: basic stops a factor for everyone at a conflict, aggressive per tensor") {
  auto model = [](const char* strategy) {
    return std::string("parallel: {device_num: 8, search_mode: factor_propagation, factor_strategy: ") + strategy +
           ", device_matrix: [2, 4], alias_name: [dp, mp]}\n"
           "inputs:\n  - {name: x, shape: [16, 8], dtype: float32, sharding: {layout: [dp, None]}}\n"
           "  - {name: y, shape: [16, 8], dtype: float32, sharding: {layout: [None, None]}}\n"
           "ops:\n  - {name: s, type: Add, inputs: [x, y]}\n  - {name: z, type: ReLU, inputs: [s]}\n";
  };
  // y is closed and unsplit on dim 0. Basic: y cannot take dp, so nobody does, and s's tensor
  // stays whole -- z, which sees only s, is replicated. Aggressive: s takes dp (y alone does
  // not), and so does z.
  Compiled basic = compiled(model("basic"));
  CHECK(printAliasLayout(opNamed(basic.global, "z").parallel->outputLayouts[0]) == "(None, None)");
  Compiled aggressive = compiled(model("aggressive"));
  CHECK(printAliasLayout(opNamed(aggressive.global, "z").parallel->outputLayouts[0]) == "(dp, None)");
  Compiled both = compiled(model("basic_then_aggressive"));
  CHECK(printAliasLayout(opNamed(both.global, "z").parallel->outputLayouts[0]) == "(dp, None)");
}

}  // namespace irc::test::propagation_cases

namespace irc::test::propagation_cases {

// An op's annotation is on the heap, made on first write (ir/heap_default.h): a pass that reads
// it through a non-const op would give every op one. Only the configured ops may have one.
TEST_CASE("after a whole compile, only the ops the model configured hold an annotation") {
  for (SearchMode mode : {SearchMode::ShardingPropagation, SearchMode::FactorPropagation}) {
    CAPTURE(static_cast<int>(mode));
    std::string header = kHeader;
    header.replace(header.find("{device_num: 8}"), 15, "{device_num: 8, device_matrix: [2, 4], alias_name: [dp, mp]}");
    Compiled c =
        compiled(header +
                     "ops:\n  - {name: a, type: MatMul, inputs: [x, w], in_strategy: [[2, 1], [1, 4]]}\n"
                     "  - {name: b, type: ReLU, inputs: [a], sharding: {layout: [dp, None]}}\n"
                     "  - {name: c, type: MatMul, inputs: [b, w2]}\n  - {name: d, type: ReLU, inputs: [c], priority: 1}\n"
                     "  - {name: e, type: Tanh, inputs: [d]}\n  - {name: f, type: Reshape, inputs: [e, [64, 8, 8]]}\n"
                     "  - {name: g, type: ReLU, inputs: [f]}\n",
                 mode);
    for (const Graph* g : {&c.original, &c.global, &c.locals.begin()->second}) {
      std::vector<std::string> annotated;
      for (const Op& op : g->ops)
        if (op.annotation.written()) annotated.push_back(op.name);
      CHECK(annotated == std::vector<std::string>{"a", "b", "d"});
    }
  }
}

}  // namespace irc::test::propagation_cases

namespace irc::test::propagation_cases {

TEST_CASE(
    "sharding propagation: on 12 devices a 3 x 4 strategy reaches its neighbours (any integer split, not only powers of two)") {
  // Megatron's data x tensor split on 12 devices: the bias Add and ReLU after a (3, 4) product take
  // (3, 4); with only powers of two as candidates they were replicated and gathered the result.
  Compiled c = compiled(
      "parallel: {device_num: 12, fully_use_devices: false}\n"
      "inputs:\n  - {name: x, shape: [48, 48], dtype: float32}\n"
      "parameters:\n  - {name: w, shape: [48, 48], dtype: float32}\n  - {name: b, shape: [48], dtype: float32}\n"
      "ops:\n  - {name: mm, type: MatMul, inputs: [x, w], in_strategy: [[3, 1], [1, 4]]}\n"
      "  - {name: bias, type: Add, inputs: [mm, b]}\n  - {name: act, type: ReLU, inputs: [bias]}\n");
  CHECK(strategyOf(c, "bias") == "((3, 4), (4))");
  CHECK(strategyOf(c, "act") == "((3, 4))");
  for (const Op& op : c.global.ops) CHECK_MESSAGE(!op.inserted(), op.name);
}

}  // namespace irc::test::propagation_cases

namespace irc::test::propagation_cases {

TEST_CASE("data_parallel: the batch stays split through transposes, scalars and weights, and nothing communicates") {
  // T5's rsqrt as TorchScript writes it, Div(1, Sqrt(var)): the scalar numerator does not decide
  // (it was replicated, and gathered around every norm); a weight's Transpose is replicated as DDP
  // holds it (its dim 0 was split); a batch transposed to dim 1 stays split there (the next op
  // split its dim 0, the sequence, and gathered).
  Compiled c = compiled(
      "parallel: {device_num: 4, search_mode: data_parallel}\n"
      "inputs:\n  - {name: x, shape: [8, 16], dtype: float32}\n"
      "parameters:\n  - {name: one, shape: [], dtype: float32}\n  - {name: w, shape: [16, 16], dtype: float32}\n"
      "ops:\n"
      "  - {name: sq, type: Sqrt, inputs: [x]}\n"
      "  - {name: inv, type: RealDiv, inputs: [one, sq]}\n"
      "  - {name: wt, type: Transpose, inputs: [w, [1, 0]]}\n"
      "  - {name: mm, type: MatMul, inputs: [inv, wt]}\n"
      "  - {name: t, type: Transpose, inputs: [mm, [1, 0]]}\n"
      "  - {name: act, type: ReLU, inputs: [t]}\n"
      "  - {name: back, type: Transpose, inputs: [act, [1, 0]]}\n"
      "  - {name: out, type: Add, inputs: [back, x]}\n");
  CHECK(strategyOf(c, "inv") == "((), (4, 1))");
  CHECK(strategyOf(c, "wt") == "((1, 1))");
  CHECK(strategyOf(c, "act") == "((1, 4))");
  for (const Op& op : c.global.ops) CHECK_MESSAGE(!op.inserted(), op.name);
}

}  // namespace irc::test::propagation_cases
