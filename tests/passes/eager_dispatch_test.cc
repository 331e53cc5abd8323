// Eager dispatch (`cluster.dispatch: eager`, docs/cluster.md): the host issues every op, the
// device runs each kernel once issued; the expected seconds are derived by hand with a host so
// slow (1 ms an op) that the kernels' microseconds only show where the device waits for nothing.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "cost/eager_dispatch.h"
#include "cost/kernel_time.h"
#include "cost/step_schedule.h"
#include "tests/approx.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace irc::test {
namespace {

ClusterStepEstimate estimate(const std::string& parallel, const std::string& dispatch) {
  Compiled c = compileAllRanks("parallel: {device_num: 1, " + parallel +
                               "}\n"
                               "cluster: {preset: h200-sxm, dispatch: " +
                               dispatch +
                               ", host_op_seconds: 0.001}\n"
                               "inputs: [{name: x, shape: [4, 4], dtype: float32}]\n"
                               "parameters: [{name: w, shape: [4, 4], dtype: float32}]\n"
                               "ops:\n  - {name: mm, type: MatMul, inputs: [x, w]}\n"
                               "  - {name: r, type: ReLU, inputs: [mm]}\noutputs: [r]\n");
  REQUIRE(c.errors.empty());
  return *estimateClusterStep(c.global, c.options);
}

}  // namespace

TEST_CASE("eager dispatch: the host's ops against the device's kernels, derived by hand") {
  // Each kernel of this model takes microseconds (the launch's 4 us and a few bytes): call the
  // product's m and the ReLU's r, under 10 us each.
  SUBCASE("inference: two ops, the device idle until each is issued") {
    ClusterStepEstimate graph = estimate("training: false", "graph");
    ClusterStepEstimate eager = estimate("training: false", "eager");
    CHECK(graph.total < 20e-6);  // m + r
    // host: 1 ms, 2 ms; the ReLU starts at 2 ms: 2 ms + r.
    CHECK(eager.total > 2e-3);
    CHECK(eager.total < 2e-3 + 10e-6);
  }
  SUBCASE("training: the backward in reverse, then the optimizer's loop") {
    ClusterStepEstimate eager = estimate("training: true, optimizer: sgd, optimizer_kernels: for_loop", "eager");
    // Forward: 2 ops (2 ms). Backward: the ReLU's operand takes a gradient (1 op); w's gradient
    // is x^T G (x transposed and the product: 2 ops); x takes none: 3 ms. The device's last kernel, w's gradient (2m), starts
    // at 5 ms: compute 5 ms + 2m. SGD's loop: one add_ for w: 1 ms of host, the device's update
    // far shorter.
    CHECK(eager.compute > 5e-3);
    CHECK(eager.compute < 5e-3 + 20e-6);
    CHECK(eager.optimizer == relative(1e-3));
    CHECK(eager.total == relative(eager.compute + eager.optimizer));
  }
  SUBCASE("AdamW's per-parameter loop issues 11 ops, foreach one set for all") {
    CHECK(estimate("training: true, optimizer: adamw, optimizer_kernels: for_loop", "eager").optimizer == relative(11e-3));
    CHECK(estimate("training: true, optimizer: adamw, optimizer_kernels: foreach", "eager").optimizer == relative(11e-3));
    CHECK(estimate("training: true, optimizer: adamw, optimizer_kernels: fused", "eager").optimizer == relative(1e-3));
  }
  SUBCASE("bf16 autocast casts the product's two float32 operands, and w's gradient back") {
    ClusterStepEstimate eager =
        estimate("training: true, optimizer: sgd, optimizer_kernels: for_loop, precision: bf16_mixed", "eager");
    // Forward: the product and its two casts, the ReLU: 4 ms. Backward: the ReLU (1), w's
    // gradient, transpose and cast back (3): 8 ms.
    CHECK(eager.compute > 8e-3);
    CHECK(eager.compute < 8e-3 + 20e-6);
  }
}

TEST_CASE("eager dispatch: a bias broadcast and a value read twice, derived by hand") {
  // y = relu(x w + b) + (x w + b): the bias b [4] is broadcast over the rows, a = x w + b is read by
  // the ReLU and the final Add.
  Compiled c = compileAllRanks(
      "parallel: {device_num: 1, training: true, optimizer: sgd, optimizer_kernels: for_loop}\n"
      "cluster: {preset: h200-sxm, dispatch: eager, host_op_seconds: 0.001}\n"
      "inputs: [{name: x, shape: [4, 4], dtype: float32}]\n"
      "parameters: [{name: w, shape: [4, 4], dtype: float32}, {name: b, shape: [4], dtype: float32}]\n"
      "ops:\n  - {name: mm, type: MatMul, inputs: [x, w]}\n  - {name: a, type: Add, inputs: [mm, b]}\n"
      "  - {name: r, type: ReLU, inputs: [a]}\n  - {name: y, type: Add, inputs: [r, a]}\noutputs: [y]\n");
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  ClusterStepEstimate e = *estimateClusterStep(c.global, c.options);
  // Forward: 4 ops (4 ms). Backward, autograd's formulas: y's two operands (2) and a's second
  // read accumulated (1); the ReLU's (1); mm's gradient (1) and b's, summed back over the rows
  // (2); w's, x^T G (2): 9 ops. The device's last kernel starts at 13 ms. SGD's loop: w and b.
  CHECK(e.compute > 13e-3);
  CHECK(e.compute < 13e-3 + 30e-6);
  CHECK(e.optimizer == relative(2e-3));
}

TEST_CASE("eager dispatch: a stream waits for the slower of host and device, op by op") {
  EagerStream s;
  s.issue(1, 5);  // host 1, device 1..6
  s.issue(1, 1);  // host 2, device 6..7: the host ran ahead
  CHECK(s.finish() == 7);
  s.issue(10, 1);  // host 12, device 12..13: the device waited
  CHECK(s.finish() == 13);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("eager dispatch is a torch export's default: a plan over an ONNX graph, unless its cluster says graph") {
  TempDir dir;
  const std::string onnx = std::string(IRC_SOURCE_DIR) + "/examples/gpt2.onnx";
  auto stepOf = [&](const std::string& cluster) {
    writeFile(dir.path() + "/plan.yaml", "graph: " + onnx +
                                             "\ndims: {batch: 4, sequence: 8}\nparallel: {device_num: 1, training: true}\n"
                                             "cluster: {" +
                                             cluster + "}\n");
    RunResult r = runIrc({"plan.yaml", "--report", "r.json", "-q"}, dir.path());
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    return nlohmann::json::parse(readFile(dir.path() + "/r.json"))["totals"]["estimated_step_seconds"].get<double>();
  };
  double byDefault = stepOf("preset: h200-sxm");
  CHECK(stepOf("preset: h200-sxm, dispatch: eager") == byDefault);
  double graph = stepOf("preset: h200-sxm, dispatch: graph");
  // A tiny GPT-2 issues hundreds of ops: the host's 20 us each outweigh its microsecond kernels.
  CHECK(byDefault > 5 * graph);
}

}  // namespace irc::test
