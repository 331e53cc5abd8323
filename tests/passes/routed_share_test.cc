// The experts' padded slots: hardware FLOPs, not model FLOPs (cost/routed_share.h).
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cost/routed_share.h"
#include "cost/step_schedule.h"
#include "tests/approx.h"
#include "tests/model_util.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace irc::test {
namespace {

// One group of 8 tokens, each choosing one of 4 experts, each expert `capacity` slots.
Compiled experts(int64_t capacity) {
  Compiled c = compileAllRanks(fmt::format(R"(parallel: {{device_num: 1, training: true}}
cluster: {{preset: dgx-h100}}
inputs:
  - {{name: x, shape: [1, 8, 16], dtype: float32}}
  - {{name: idx, shape: [1, 8, 1], dtype: int32}}
  - {{name: gate, shape: [1, 8, 1], dtype: float32}}
parameters:
  - {{name: w, shape: [4, 16, 16], dtype: float32}}
ops:
  - {{name: slots, type: MoeDispatch, inputs: [x, idx], attrs: {{num_experts: 4, capacity: {}}}}}
  - {{name: y, type: BatchMatMul, inputs: [slots, w]}}
  - {{name: act, type: ReLU, inputs: [y]}}
  - {{name: back, type: MoeCombine, inputs: [act, idx, gate]}}
  - {{name: out, type: ReLU, inputs: [back]}}
outputs: [out]
)",
                                           capacity));
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  return c;
}

double shareOf(const Compiled& c, const std::string& name) {
  const std::vector<double> shares = routedShares(c.global);
  for (OpId id : c.global.order)
    if (c.global.op(id).name == name) return shares[id];
  FAIL("no op ", name);
  return 0;
}

TEST_CASE("model FLOPs: the routed tokens' share of the experts' slots; the padding counts as hardware FLOPs") {
  // 8 choices in 4 experts x 2 slots fill every slot; in 4 x 4, half of them; 4 x 1 slots hold
  // only 4 of the 8 (the others dropped): all filled.
  CHECK(shareOf(experts(2), "y") == 1.0);
  CHECK(shareOf(experts(4), "y") == 0.5);
  CHECK(shareOf(experts(4), "act") == 0.5);
  CHECK(shareOf(experts(4), "back") == 0.5);
  CHECK(shareOf(experts(4), "out") == 1.0);  // the tokens again, after the combine
  CHECK(shareOf(experts(1), "y") == 1.0);
  // The expert product's 2 x 4 x 4 x 16 x 16 = 32,768 forward FLOPs at 4 slots are half padding,
  // three times over in training (forward and backward); the ReLU's 4 x 4 x 16 points half too,
  // and half the combine's: the step's hardware FLOPs exceed its model FLOPs by exactly these.
  Compiled four = experts(4);
  auto e = estimateClusterStep(four.global, four.options);
  REQUIRE(e);
  // (The combine's points are its result's, the 8 tokens' 16 features.)
  const double productPadding = 0.5 * 2 * 4 * 4 * 16 * 16, reluPadding = 0.5 * 4 * 4 * 16, combinePadding = 0.5 * 8 * 16;
  CHECK(e->hardwareFlops - e->modelFlops == relative(3 * (productPadding + reluPadding + combinePadding)));
  Compiled two = experts(2);
  auto full = estimateClusterStep(two.global, two.options);
  REQUIRE(full);
  CHECK(full->hardwareFlops == full->modelFlops);
  // The routed work is the same at 2 slots and at 4: the product's and the ReLU's routed halves
  // are the whole at 2. What differs is the dispatch writing 4 x 2 x 16 more slot points (its
  // operands are tokens: counted whole) and the combine's points halved: 3 x (128 - 64).
  CHECK(e->modelFlops - full->modelFlops == relative(3 * (128 - 64)));
}

// The report's active_parameters for any graph with a dispatch: a token multiplies with K of
// the E experts' weights.
TEST_CASE("active parameters: the experts' weights a token's K choices read, of E") {
  Compiled c = experts(4);
  const std::vector<double> shares = activeParameterShares(c.global);
  for (ValueId v : c.global.parameters)
    if (c.global.value(v).name == "w") CHECK(shares[v] == 0.25);  // one choice of 4 experts
  for (ValueId v : c.global.inputs) CHECK(shares[v] == 1.0);
  // As the report counts a YAML model's: the 4 x 16 x 16 experts of which 2 choices read half,
  // and a 16 x 16 head every token reads.
  TempDir dir;
  writeFile(dir.path() + "/moe.yaml", R"(name: moe
parallel: {device_num: 1}
inputs:
  - {name: x, shape: [1, 8, 16], dtype: float32}
  - {name: idx, shape: [1, 8, 2], dtype: int32}
  - {name: gate, shape: [1, 8, 2], dtype: float32}
parameters:
  - {name: w, shape: [4, 16, 16], dtype: float32}
  - {name: head, shape: [16, 16], dtype: float32}
ops:
  - {name: slots, type: MoeDispatch, inputs: [x, idx], attrs: {num_experts: 4, capacity: 4}}
  - {name: y, type: BatchMatMul, inputs: [slots, w]}
  - {name: back, type: MoeCombine, inputs: [y, idx, gate]}
  - {name: out, type: BatchMatMul, inputs: [back, head]}
outputs: [out]
)");
  REQUIRE(runIrc({"moe.yaml", "-q", "--report", "r.json"}, dir.path()).exitCode == 0);
  const nlohmann::json totals = nlohmann::json::parse(readFile(dir.path() + "/r.json"))["totals"];
  CHECK(totals["parameters"] == 4 * 16 * 16 + 16 * 16);
  CHECK(totals["active_parameters"] == 2 * 16 * 16 + 16 * 16);
}

}  // namespace
}  // namespace irc::test
