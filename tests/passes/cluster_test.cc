// Step time on a cluster (docs/cluster.md): collectives by the links their groups cross, kernels
// at achievable rates, mixed precision's memory, checkpoints per layer, and the step's FLOPs —
// every expected figure derived by hand from the preset's datasheet figures.
#include <doctest/doctest.h>

#include <map>

#include <fmt/format.h>

#include "cost/cluster_presets.h"
#include "dumps/explain.h"
#include "cost/attention_fusion.h"
#include "cost/collective_time.h"
#include "cost/kernel_time.h"
#include "cost/memory_estimate.h"
#include "cost/step_cost.h"
#include "cost/step_schedule.h"
#include "tests/approx.h"
#include "tests/model_util.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {

const ClusterDescription& a100() {
  static const ClusterDescription c = *clusterPreset("dgx-a100-80gb");
  return c;
}

std::string matmulModel(const std::string& parallel, const std::string& cluster, const std::string& strategy,
                        const std::string& extra = "") {
  return "parallel: {" + parallel + "}\ncluster: {" + cluster +
         "}\n"
         "inputs: [{name: x, shape: [4096, 8192], dtype: float32}]\n"
         "parameters: [{name: w, shape: [8192, 8192], dtype: float32}]\n"
         "ops:\n  - {name: mm, type: MatMul, inputs: [x, w], in_strategy: " +
         strategy + "}\noutputs: [mm]\n" + extra;
}

}  // namespace

TEST_CASE("cluster: a collective's time follows the link its group crosses") {
  const ClusterDescription& c = a100();
  // Tensor parallel over the 8 devices of a node: NVLink at 300 GB/s x 230/300 = 230 GB/s of bus
  // bandwidth; a ring AllReduce of 50 MB sends 2 x 7/8 of it, with 2 x 7 steps of 3 us.
  DeviceMatrix mesh = DeviceMatrix::unnamed({4, 8});
  GroupSpan tp = groupSpan(mesh, {1}, 8);
  CHECK(tp.ranks == 8);
  CHECK(tp.nodes == 1);
  CHECK(collectiveSeconds(CollectiveKind::AllReduce, 50e6, tp, c) == relative(2 * 7.0 / 8 * 50e6 / 230e9 + 2 * 7 * 3e-6));
  // Data parallel across the 4 nodes, one rank per node: that rank's NIC, 200 Gb/s = 25 GB/s at
  // 90 % of line rate; latency 2 tree levels (log2 4) of 5 us each way.
  GroupSpan dp = groupSpan(mesh, {0}, 8);
  CHECK(dp.ranks == 4);
  CHECK(dp.nodes == 4);
  CHECK(linkOf(dp, c).busBandwidth == relative(22.5e9));
  CHECK(collectiveSeconds(CollectiveKind::AllReduce, 50e6, dp, c) == relative(2 * 3.0 / 4 * 50e6 / 22.5e9 + 2 * 2 * 5e-6));
  // The whole mesh: 8 ranks a node drive 8 NICs (180 GB/s), below NVLink's 230.
  GroupSpan all = groupSpan(mesh, {0, 1}, 8);
  CHECK(all.nodes == 4);
  CHECK(linkOf(all, c).busBandwidth == relative(180e9));
  CHECK(collectiveSeconds(CollectiveKind::AllGather, 1e6, all, c) == relative(31 * 1e6 / 180e9 + 7 * 3e-6 + 2 * 5e-6));
  CHECK(collectiveSeconds(CollectiveKind::AllReduce, 1e6, GroupSpan{1, 1}, c) == 0);
  // A pipeline's Send/Receive: within a node over NVLink (230 GB/s, one 3 us step), across nodes
  // over the rank's NIC (22.5 GB/s, one 5 us step).
  CHECK(collectiveSeconds(CollectiveKind::PointToPoint, 1e6, pairSpan(1, 8), c) == relative(1e6 / 230e9 + 3e-6));
  CHECK(collectiveSeconds(CollectiveKind::PointToPoint, 1e6, pairSpan(8, 8), c) == relative(1e6 / 22.5e9 + 5e-6));
  // Gradients reduce in Megatron's buckets of 40 M elements (or 1 M a replica, the larger): 100 MB
  // of 16-bit gradients over the node's 8 ranks are 2 buckets (80 MB each at most) of 50 MB, not
  // one of 100 MB, each paying the ring's 14 latency steps.
  CHECK(gradientReductionSeconds(100e6, 2, tp, c) == relative(2 * (2 * 7.0 / 8 * 50e6 / 230e9 + 2 * 7 * 3e-6)));
  CHECK(gradientReductionSeconds(60e6, 2, tp, c) == relative(2 * 7.0 / 8 * 60e6 / 230e9 + 2 * 7 * 3e-6));
}

TEST_CASE("cluster: a matrix product's rate falls with wave quantization") {
  const ClusterDescription& c = a100();
  // 2048 x 2048 output on 108 SMs: 128 x 64 tiles give 512 tiles in 5 waves of 108 (540 slots),
  // the best of the tile shapes (128 x 128: 256 tiles in 3 waves, 0.79).
  KernelWork square{.flops = 2.0 * 2048 * 2048 * 8192, .bytes = 0, .matmul = true, .rows = 2048, .columns = 2048};
  CHECK(waveEfficiency(square, c) == relative(512.0 / 540));
  CHECK(kernelSeconds(square, c, Precision::Bf16Mixed) == relative(square.flops / (312e12 * 0.8 * 512.0 / 540) + 4e-6));
  // Eight rows fill an eighth of a 64-row tile and one wave of 8192/64 = 128 tiles over 108 SMs
  // is 2 waves: far below peak.
  KernelWork skinny{.flops = 2.0 * 8 * 8192 * 8192, .bytes = 0, .matmul = true, .rows = 8, .columns = 8192};
  CHECK(waveEfficiency(skinny, c) == relative(128.0 / 216 * 8 / 64));
  // Edges that fill part of a tile: a 1200 x 768 output. 128 x 128: 10 x 6 = 60 tiles (1 wave),
  // 128 x 64: 10 x 12 = 120 (2 waves), 64 x 128: 19 x 6 = 114 (2), 64 x 64: 19 x 12 = 228 (3
  // waves, 324 slots): the useful points over the slots' points, 1200 x 768 / (64 x 64 x 324) =
  // 25/36 at best, 64 x 64's. Rounded down at the edges, 128 x 64's 9 x 12 = 108 tiles would fit
  // one wave and claim more than the device: no shape's efficiency exceeds 1.
  KernelWork edges{.flops = 2.0 * 1200 * 768 * 4096, .bytes = 0, .matmul = true, .rows = 1200, .columns = 768};
  CHECK(waveEfficiency(edges, c) == relative(25.0 / 36));
  for (double rows : {1.0, 100.0, 1200.0, 1300.0, 4096.0})
    for (double columns : {1.0, 768.0, 2048.0, 3000.0}) {
      KernelWork w{.flops = 1, .matmul = true, .rows = rows, .columns = columns};
      CHECK(waveEfficiency(w, c) <= 1);
      CHECK(waveEfficiency(w, c) > 0);
    }
  // Elementwise: bytes at 85 % of 2,039 GB/s; a view launches nothing.
  CHECK(kernelSeconds({.flops = 1e6, .bytes = 1e9}, c, Precision::Bf16Mixed) == relative(1e9 / (2039e9 * 0.85) + 4e-6));
  CHECK(kernelSeconds({.bytes = 1e9, .view = true}, c, Precision::Bf16Mixed) == 0);
}

TEST_CASE("cluster: presets, overrides and what is wrong with a cluster block") {
  ParallelConfig p =
      parseModelAndSettings(matmulModel("device_num: 8, precision: bf16_mixed",
                                        "preset: dgx-h100, nic_gbps: 200, devices_per_node: 4", "[[8, 1], [1, 1]]"))
          .parallel;
  REQUIRE(p.cluster);
  CHECK(p.cluster->preset == "dgx-h100");
  CHECK(p.cluster->device.bf16Flops == 989e12);
  CHECK(p.cluster->devicesPerNode == 4);
  CHECK(p.cluster->nicBandwidthPerDevice() == relative(8 * 200e9 / 8 / 4));
  CHECK(p.precision == Precision::Bf16Mixed);
  CHECK(modelErrors(matmulModel("device_num: 8", "preset: dgx-b201", "[[8, 1], [1, 1]]")) ==
        "m.yaml:2:19: error: cluster.preset 'dgx-b201' is not known; did you mean 'dgx-b200'?\n"
        "cluster: {preset: dgx-b201}\n"
        "                  ^\n");
  CHECK(modelErrors(matmulModel("device_num: 8", "nic_gbps: 400", "[[8, 1], [1, 1]]"))
            .find("error: cluster needs a preset (dgx-a100-80gb, dgx-h100, h200-sxm, dgx-h800, hgx-h20, dgx-b200, gb200-nvl72, "
                  "dgx-b300, gb300-nvl72, mi300x, mi325x, ascend-910b, ascend-910c) or peak_flops, hbm_bandwidth, "
                  "intra_node_bandwidth, nics_per_node") != std::string::npos);
  CHECK(modelErrors(matmulModel("device_num: 8", "preset: dgx-h100, gemm_efficiency: 1.5", "[[8, 1], [1, 1]]"))
            .find("cluster.gemm_efficiency is 1.5 (a fraction), outside what hardware does; valid: > 0 .. 1") !=
        std::string::npos);
  // Figures outside physical sense printed "-nan s estimated" (a peak of 1e-300 FLOP/s) or 1e302
  // s (a latency of 1e300 s); a node size that does not divide the devices made the step faster.
  CHECK(modelErrors(matmulModel("device_num: 8", "preset: dgx-h100, peak_flops: {bf16: 1e-300}", "[[8, 1], [1, 1]]"))
            .find("cluster.peak_flops.bf16 is 1e-300 FLOP/s, outside what a device does; valid: 1e+09 .. 1e+18") !=
        std::string::npos);
  CHECK(modelErrors(matmulModel("device_num: 8", "preset: dgx-h100, inter_node_latency: 1e300", "[[8, 1], [1, 1]]"))
            .find("cluster.inter_node_latency is 1e+300 s, outside what hardware does; valid: 1e-09 .. 1") != std::string::npos);
  CHECK(modelErrors(matmulModel("device_num: 8", "preset: dgx-h100, devices_per_node: 3", "[[8, 1], [1, 1]]"))
            .find("cluster.devices_per_node 3 does not divide the model's 8 devices") != std::string::npos);
  CHECK(modelErrors(matmulModel("device_num: 8", "preset: dgx-h100, devices_per_node: 16", "[[8, 1], [1, 1]]")).empty());
  CHECK(modelErrors(matmulModel("device_num: 8, cost_model: {alpha: 1e300}", "preset: dgx-h100", "[[8, 1], [1, 1]]"))
            .find("cost_model.alpha is 1e+300, outside what a machine does; valid: 1e-09 .. 1") != std::string::npos);
  CHECK(modelErrors(matmulModel("device_num: 8, precision: int4", "preset: dgx-h100", "[[8, 1], [1, 1]]"))
            .find("precision 'int4' is not known") != std::string::npos);
}

// A Slice or a Concat visits its result's points once: GPT-OSS's sink column (scores [B, A, S, S]
// concatenated with a column [B, A, S, 1], softmaxed, sliced back) was counted as the product of
// both sides' sizes, A x S x S x (S + 1) a sequence, cubic: 8.8e12 of a two-layer GPT-OSS's
// 16.2e12 forward FLOPs at S 4,096.
// A sliding window's attention (BatchMatMul's `window`): each query reads `window` keys, so q kᵀ
// computes that band of the scores and probs v contracts over it; the kernels' FLOPs and time
// follow, the shapes do not (the scores stay [.., S, S], as transformers' masked scores are).
// Causal (BatchMatMul's `causal`, as a decoder's SDPA with is_causal): query i reads the keys
// up to its position, so a causal kernel computes the lower triangle of blocks (Megatron-LM's
// FLOP count halves attention the same way); with a window, the last `window` of those.
TEST_CASE("cluster: a windowed or causal attention's products count the keys each query reads, not the sequence's") {
  auto flops = [](const std::string& attrs, int64_t queries = 64, int64_t keys = 64, bool everyPoint = false) {
    Compiled c = compileAllRanks(fmt::format(R"(parallel: {{device_num: 1}}
cluster: {{preset: dgx-h100}}
inputs:
  - {{name: q, shape: [2, 4, {0}, 16], dtype: float32}}
  - {{name: k, shape: [2, 4, {1}, 16], dtype: float32}}
  - {{name: v, shape: [2, 4, {1}, 16], dtype: float32}}
ops:
  - {{name: scores, type: BatchMatMul, inputs: [q, k], attrs: {{transpose_b: true{2}}}}}
  - {{name: ctx, type: BatchMatMul, inputs: [scores, v], attrs: {{transpose_b: false{2}}}}}
outputs: [ctx]
)",
                                             queries, keys, attrs));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    auto e = estimateClusterStep(c.global, c.options);
    return everyPoint ? e->modelFlopsEveryPoint : e->modelFlops;
  };
  // Each product: 2 x (2 x 4 heads) x 64 queries x 16 dims x 64 keys.
  const double full = 2 * (2.0 * 2 * 4 * 64 * 16 * 64);
  CHECK(flops("") == full);
  CHECK(flops(", window: 16") == full * 16 / 64);
  CHECK(flops(", window: 128") == full);  // a window past the sequence is the whole sequence
  CHECK(flops(", window: 0") == full);
  CHECK(flops(", causal: false") == full);
  // Causal: queries 1..64 read 1..64 keys, 2,080 of the 4,096 points; within a window of 16,
  // 1 + 2 + ... + 16 and then 16 for each of the other 48 queries: 904.
  CHECK(flops(", causal: true") == relative(full * 2080 / 4096));
  CHECK(flops(", causal: true, window: 16") == relative(full * 904 / 4096));
  // Two queries after four cached keys, of six: they read 5 and 6 keys (11 of 12 points); with
  // a window of 3, 3 each (6 of 12).
  const double chunk = 2 * (2.0 * 2 * 4 * 2 * 16 * 6);
  CHECK(flops(", causal: true", 2, 6) == relative(chunk * 11 / 12));
  CHECK(flops(", causal: true, window: 3", 2, 6) == relative(chunk * 6 / 12));
  // Chunked (Llama 4): chunks of 16 of the 64 positions, query p reading (p mod 16) + 1 keys: four
  // times 1 + ... + 16 = 544 of the 4,096 points; chunks of 48: 1 + ... + 48 and 1 + ... + 16,
  // 1,312. The two queries after four cached keys in chunks of 4: positions 4 and 5 read 1 and 2
  // keys, 3 of 12.
  CHECK(flops(", causal: true, chunk: 16") == relative(full * 544 / 4096));
  CHECK(flops(", causal: true, chunk: 48") == relative(full * 1312 / 4096));
  CHECK(flops(", causal: true, chunk: 64") == flops(", causal: true"));
  CHECK(flops(", causal: true, chunk: 4", 2, 6) == relative(chunk * 3 / 12));
  // The report's model_flops_every_point: every product's points, masked or not.
  for (const char* attrs : {"", ", causal: true", ", causal: true, window: 16", ", causal: true, chunk: 16"})
    CHECK(flops(attrs, 64, 64, true) == full);
}

TEST_CASE("model: a chunk needs causal attention and no window: said at the op") {
  for (auto [attrs, said] : std::vector<std::pair<std::string, std::string>>{
           {"chunk: 4", "chunk 4 reads a query's chunk up to its position: it needs causal: true"},
           {"causal: true, chunk: 4, window: 2", "chunk and window are two kinds of local attention: give one"},
           {"causal: true, chunk: -1", "chunk is -1; valid: 0 (no chunks) or the chunk's tokens (> 0)"}}) {
    Compiled c = compileAllRanks(fmt::format(R"(parallel: {{device_num: 1}}
inputs:
  - {{name: q, shape: [2, 8, 16], dtype: float32}}
  - {{name: k, shape: [2, 8, 16], dtype: float32}}
ops:
  - {{name: scores, type: BatchMatMul, inputs: [q, k], attrs: {{transpose_b: true, {}}}}}
outputs: [scores]
)",
                                             attrs));
    CAPTURE(attrs);
    CHECK(c.errors.find(said) != std::string::npos);
  }
}

// The time follows inside a fused kernel (it skips the blocks no query reads); unfused, each
// product computes every point and the mask comes after it.
TEST_CASE("cluster: a causal attention's products take half the time in a fused kernel, all of it unfused") {
  auto compute = [](const std::string& causal, const std::string& fused) {
    Compiled c = compileAllRanks(fmt::format(R"(parallel: {{device_num: 1, precision: bf16_mixed}}
cluster: {{preset: dgx-h100, fused_attention: {1}}}
inputs:
  - {{name: q, shape: [1, 8, 1024, 2048], dtype: float32}}
  - {{name: k, shape: [1, 8, 1024, 2048], dtype: float32}}
  - {{name: v, shape: [1, 8, 1024, 2048], dtype: float32}}
ops:
  - {{name: scores, type: BatchMatMul, inputs: [q, k], attrs: {{transpose_b: true, causal: {0}}}}}
  - {{name: probs, type: Softmax, inputs: [scores], attrs: {{axis: -1}}}}
  - {{name: ctx, type: BatchMatMul, inputs: [probs, v], attrs: {{causal: {0}}}}}
outputs: [ctx]
)",
                                             causal, fused));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    return estimateClusterStep(c.global, c.options)->compute;
  };
  // A head dim of 2,048 keeps every product bound by its math, fused or not (unfused, the
  // [8, 1024, 1024] scores' 16 MiB in 16 bits take less than the product). Fused: two product
  // kernels (the softmax runs on chip), the causal kernel's math 1,025 of each 2,048 points
  // ((S + 1) / 2S); the launches stay. Unfused, each product computes every point.
  const double launches = 2 * clusterPreset("dgx-h100")->kernelLaunchSeconds;
  CHECK(compute("true", "true") - launches == relative((compute("false", "true") - launches) * 1025 / 2048));
  CHECK(compute("true", "false") == compute("false", "false"));
  CHECK(compute("false", "false") > compute("false", "true"));
}

// FlashAttention's backward recomputes the scores (it saved only the softmax's statistics):
// the scores' product three times, the context's two gradients, 2.5 times the forward's products.
TEST_CASE("cluster: a fused attention's backward recomputes the scores' product") {
  for (const char* fused : {"true", "false"}) {
    CAPTURE(fused);
    Compiled c = compileAllRanks(fmt::format(R"(parallel: {{device_num: 1, precision: bf16_mixed, training: true}}
cluster: {{preset: dgx-h100, fused_attention: {}}}
inputs:
  - {{name: q, shape: [1, 8, 4096, 128], dtype: float32}}
  - {{name: k, shape: [1, 8, 4096, 128], dtype: float32}}
  - {{name: v, shape: [1, 8, 4096, 128], dtype: float32}}
ops:
  - {{name: scores, type: BatchMatMul, inputs: [q, k], attrs: {{transpose_b: true}}}}
  - {{name: probs, type: Softmax, inputs: [scores], attrs: {{axis: -1}}}}
  - {{name: ctx, type: BatchMatMul, inputs: [probs, v]}}
outputs: [ctx]
)",
                                             fused));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    std::map<std::string, StepTime> times;
    forEachOpTime(c.global, c.options, [&](const Op& op, const StepTime& t) { times[op.name] = t; });
    const bool yes = std::string(fused) == "true";
    CHECK(times["scores"].backwardCompute == relative((yes ? 3 : 2) * times["scores"].compute));
    CHECK(times["ctx"].backwardCompute == relative(2 * times["ctx"].compute));
  }
}

TEST_CASE("cluster: a Slice's and a Concat's FLOPs are their results' elements, not both sides' sizes multiplied") {
  const std::string model = R"(parallel: {device_num: 1}
cluster: {preset: dgx-h100}
inputs:
  - {name: scores, shape: [2, 4, 16, 16], dtype: float32}
  - {name: sink, shape: [2, 4, 16, 1], dtype: float32}
ops:
  - {name: with_sink, type: Concat, inputs: [scores, sink], attrs: {axis: -1}}
  - {name: probs, type: Slice, inputs: [with_sink, [0, 0, 0, 0], [2, 4, 16, 16]]}
  - {name: out, type: ReLU, inputs: [probs]}
outputs: [out]
)";
  Compiled c = compileAllRanks(model);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  auto e = estimateClusterStep(c.global, c.options);
  REQUIRE(e);
  // Concat: 2 x 4 x 16 x 17 points; Slice and ReLU: 2 x 4 x 16 x 16 each.
  CHECK(e->modelFlops == 2.0 * 4 * 16 * 17 + 2 * (2.0 * 4 * 16 * 16));
}

TEST_CASE("cluster: the step's FLOPs, with and without recompute, and TFLOP/s per device") {
  // Data parallel over 8: the product's FLOPs are 2 x 4096 x 8192 x 8192 for all ranks together;
  // training counts 3 of them (forward, and backward's two products), recompute one more.
  double forward = 2.0 * 4096 * 8192 * 8192;
  Compiled c = compileAllRanks(matmulModel("device_num: 8, training: true, precision: bf16_mixed", "preset: dgx-a100-80gb",
                                           "[[8, 1], [1, 1]]", "recompute: [mm]\n"));
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  auto e = estimateClusterStep(c.global, c.options);
  REQUIRE(e);
  CHECK(e->modelFlops == relative(3 * forward));
  CHECK(e->hardwareFlops == relative(4 * forward));
  CHECK(e->total == relative(e->compute + e->exposedCommunication + e->pipelineBubble + e->optimizer));
  CHECK(e->tflopsPerDevice == relative(4 * forward / e->total / 8 / 1e12));
  CHECK(e->mfu == relative(3 * forward / e->total / 8 / 312e12));
  // The update reads and writes 28 bytes per element (16-bit gradient and weight, float32 master
  // weight and two moments) of the whole 8192 x 8192 weight each rank holds.
  CHECK(e->optimizer == relative(8192.0 * 8192 * 28 / (2039e9 * 0.85)));
  // Each rank's product: 512 x 8192 x 8192 (tiles of 128 x 128: 4 x 64 = 256 in 3 waves), at
  // 80 % of 312 TFLOP/s, against its bytes in bf16; x3 for backward, +1 recompute.
  double flops = 2.0 * 512 * 8192 * 8192, bytes = 2.0 * (512 * 8192 + 8192 * 8192 + 512 * 8192);
  KernelWork w{.flops = flops, .bytes = bytes, .matmul = true, .rows = 512, .columns = 8192};
  CHECK(e->compute == relative(4 * kernelSeconds(w, a100(), Precision::Bf16Mixed)));
}

TEST_CASE("cluster: recompute runs a row-parallel product and its AllReduce again, derived by hand") {
  // Row parallel over 2 ranks: each multiplies x's [4096, 4096] half by w's [4096, 8192] half and
  // the partial [4096, 8192] results are all-reduced, forward and (its dual) backward.
  auto stepOf = [](const std::string& extra) {
    Compiled c = compileAllRanks(
        matmulModel("device_num: 2, training: true, precision: bf16_mixed", "preset: dgx-a100-80gb", "[[1, 2], [2, 1]]", extra));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    return *estimateClusterStep(c.global, c.options);
  };
  ClusterStepEstimate kept = stepOf(""), again = stepOf("recompute: [mm]\n");
  // Recomputed, the forward's AllReduce runs once more: 2 x 1/2 x 67,108,864 bytes at NVLink's 230
  // GB/s bus bandwidth and 2 ring steps of 3 us.
  const double bytes = 4096.0 * 8192 * 2;
  CHECK(again.exposedCommunication - kept.exposedCommunication == relative(bytes / 230e9 + 2 * 3e-6));
  CHECK(kept.exposedCommunication == relative(2 * (bytes / 230e9 + 2 * 3e-6)));
  // And the product once more: 4096 x 8192 outputs in 128 x 128 tiles are 2,048 tiles in 19 waves
  // of 108 (2,052 slots), at 80 % of 312 TFLOP/s; far above its bytes' time.
  KernelWork w{.flops = 2.0 * 4096 * 4096 * 8192,
               .bytes = 2.0 * (4096.0 * 4096 + 4096.0 * 8192 + 4096.0 * 8192),
               .matmul = true,
               .rows = 4096,
               .columns = 8192};
  CHECK(waveEfficiency(w, a100()) == relative(2048.0 / 2052));
  CHECK(again.compute - kept.compute == relative(w.flops / (312e12 * 0.8 * 2048.0 / 2052) + 4e-6));
  CHECK(again.hardwareFlops - kept.hardwareFlops == relative(2.0 * 4096 * 8192 * 8192));  // whole shapes
}

TEST_CASE("cluster: tensor parallelism across two nodes is slower than within one") {
  // Row parallel over 16 ranks: the AllReduce of the [4096, 8192] result crosses the network on
  // 8-device nodes, NVLink when one node holds all 16.
  auto stepOf = [](const std::string& cluster) {
    Compiled c =
        compileAllRanks(matmulModel("device_num: 16, training: true, precision: bf16_mixed", cluster, "[[1, 16], [16, 1]]"));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    return *estimateClusterStep(c.global, c.options);
  };
  ClusterStepEstimate across = stepOf("preset: dgx-a100-80gb");
  // irc explain names the link the forward AllReduce crosses, with its time: 2 x 15/16 x 67,108,864
  // bytes at 180 GB/s + 2 x (7 x 3 us + 5 us) = 0.00075105 s.
  Compiled c = compileAllRanks(
      matmulModel("device_num: 16, training: true, precision: bf16_mixed", "preset: dgx-a100-80gb", "[[1, 16], [16, 1]]"));
  std::string text = explainOp(c.global, "mm.forward_op.0", 0, &c.options).value_or("");
  CHECK_MESSAGE(text.find("  time on dgx-a100-80gb: 0.0007511 s over the network across 2 nodes, 8 ranks per node (180 GB/s bus "
                          "bandwidth)\n") != std::string::npos,
                text);
  ClusterStepEstimate within = stepOf("preset: dgx-a100-80gb, devices_per_node: 16, nics_per_node: 16");
  // The 16-bit result, 4096 x 8192 x 2 bytes, all-reduced forward and again backward. Across two
  // nodes the ring runs at 8 NICs' 180 GB/s with 7 NVLink steps and one network level of 5 us;
  // within one node at NVLink's 230 GB/s with 15 steps of 3 us.
  double bytes = 4096.0 * 8192 * 2;
  CHECK(across.exposedCommunication == relative(2 * (2 * 15.0 / 16 * bytes / 180e9 + 2 * (7 * 3e-6 + 5e-6))));
  CHECK(within.exposedCommunication == relative(2 * (2 * 15.0 / 16 * bytes / 230e9 + 2 * 15 * 3e-6)));
  CHECK(across.total > within.total);
  CHECK(across.compute == relative(within.compute));
}

TEST_CASE("mixed precision: 16-bit weights and gradients, float32 master weights and moments") {
  // x [4096, 8192] split 8 ways, w [8192, 8192] whole on every rank: 67,108,864 elements of w,
  // 2 bytes each as a weight and as a gradient, 4 as a master weight, 8 as AdamW's two moments.
  Compiled c = compileAllRanks(
      matmulModel("device_num: 8, training: true, precision: bf16_mixed", "preset: dgx-a100-80gb", "[[8, 1], [1, 1]]"));
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  MemoryEstimate m = estimateMemory(c.global, c.options);
  REQUIRE(m.training);
  double elements = 8192.0 * 8192;
  CHECK(m.training->parameterBytes == 2 * elements);
  CHECK(m.training->gradientBytes == 2 * elements);
  CHECK(m.training->masterWeightBytes == 4 * elements);
  CHECK(m.training->optimizerStateBytes == 8 * elements);
  // The 512 x 8192 slice of x the product keeps for w's gradient, in bf16, and the loss's
  // log-softmax of the 512 x 8192 result.
  CHECK(m.training->savedActivationBytes == 2 * 2.0 * 512 * 8192);
  CompileOptions fp32 = c.options;
  fp32.precision = Precision::Fp32;
  MemoryEstimate f = estimateMemory(c.global, fp32);
  CHECK(f.training->parameterBytes == 4 * elements);
  CHECK(f.training->masterWeightBytes == 0);
}

TEST_CASE("recompute: each listed glob is one checkpoint, which keeps its own input") {
  // Two layers, each checkpointed alone (as gen_cluster_model.py and torch's per-layer
  // checkpointing do): layer 0 keeps x, layer 1 keeps l0_act; with the loss's log-softmax of the
  // output, three [64, 64] float32 tensors of 16 KiB. One glob over both layers keeps only x.
  auto savedWith = [](const std::string& recompute) {
    Compiled c = compileAllRanks(
        "parallel: {device_num: 1, training: true}\n"
        "inputs: [{name: x, shape: [64, 64], dtype: float32}]\n"
        "parameters: [{name: w1, shape: [64, 64], dtype: float32}, {name: w2, shape: [64, 64], dtype: float32}]\n"
        "ops:\n"
        "  - {name: l0_mm, type: MatMul, inputs: [x, w1]}\n"
        "  - {name: l0_act, type: ReLU, inputs: [l0_mm]}\n"
        "  - {name: l1_mm, type: MatMul, inputs: [l0_act, w2]}\n"
        "  - {name: l1_act, type: ReLU, inputs: [l1_mm]}\n"
        "outputs: [l1_act]\n"
        "recompute: " +
        recompute + "\n");
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    return estimateMemory(c.global, c.options).training->savedActivationBytes;
  };
  CHECK(savedWith("[\"l0_*\", \"l1_*\"]") == 3 * 16384);
  CHECK(savedWith("[\"l*\"]") == 2 * 16384);
}

TEST_CASE("cluster: the optimal planner times its steps on the cluster") {
  // An AllReduce step over the 4 nodes' data-parallel axis of a (4, 8) mesh: the cluster's
  // network time, where the flat model would charge 10 us a message and 10 GB/s.
  ParallelSettings s;
  s.cluster = a100();
  RedistStep step;
  step.kind = RedistStep::Kind::AllReduce;
  step.mesh = DeviceMatrix::unnamed({4, 8});
  step.axes = {0};
  step.localBefore = {1024, 1024};
  CHECK(stepTimerFor(s)(step, 2) == relative(collectiveSeconds(CollectiveKind::AllReduce, 2.0 * 1024 * 1024, {4, 4}, a100())));
  ParallelSettings flat;
  CHECK(stepTimerFor(flat)(step, 2) == relative(stepTime(step, 2, flat.costModel)));
}

TEST_CASE("cluster: a fused attention kernel keeps the scores and probabilities on chip") {
  // q k^T -> scale -> softmax -> probs v: with the stack's FlashAttention (fused_attention, the
  // H100 preset's default) the scores, the scaled scores and the probabilities stay on chip;
  // the scale and the softmax launch no kernel, and the products read q, k, v and write ctx only.
  auto compiled = [](const std::string& fused) {
    Compiled c = compileAllRanks(
        "parallel: {device_num: 2, training: true, precision: bf16_mixed}\n"
        "cluster: {preset: dgx-h100, fused_attention: " +
        fused +
        "}\n"
        "inputs:\n  - {name: q, shape: [2, 8, 512, 64], dtype: float32}\n  - {name: k, shape: [2, 8, 512, 64], dtype: float32}\n"
        "  - {name: v, shape: [2, 8, 512, 64], dtype: float32}\n"
        "parameters:\n  - {name: scale, shape: [], dtype: float32}\n"
        "ops:\n  - {name: scores, type: BatchMatMul, inputs: [q, k], attrs: {transpose_b: true}, in_strategy: [[2, 1, 1, 1], [2, "
        "1, 1, 1]]}\n"
        "  - {name: scaled, type: Mul, inputs: [scores, scale]}\n  - {name: probs, type: Softmax, inputs: [scaled], attrs: "
        "{axis: -1}}\n"
        "  - {name: ctx, type: BatchMatMul, inputs: [probs, v]}\noutputs: [ctx]\n");
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    return c;
  };
  Compiled fused = compiled("true");
  std::vector<bool> onChip = fusedAttentionValues(fused.global);
  auto chip = [&](const char* name) { return static_cast<bool>(onChip[*fused.global.findValue(name)]); };
  CHECK(chip("scores"));
  CHECK(chip("scaled"));
  CHECK(chip("probs"));
  CHECK_FALSE(chip("q"));
  CHECK_FALSE(chip("ctx"));
  // Each rank: the products' FLOPs, 2 x 8 x 512 x 512 x 64 x 2 each, and bytes of q, k, v and ctx
  // in bf16 (4 x 8 x 512 x 64 x 2); unfused, the [8, 512, 512] scores and probabilities cross HBM
  // six times (written by the first product, read and written by the scale and the softmax, read
  // by the second product): 24 MiB against 2 MiB.
  auto computeOf = [](const Compiled& c) { return estimateClusterStep(c.global, c.options)->compute; };
  Compiled unfused = compiled("false");
  CHECK(computeOf(fused) < 0.5 * computeOf(unfused));
}

// The step by category adds up to the step: a lone product is all `gemm` (and its gradient's
// reduction and the update); an attention block's products, softmax and scale all `attention`.
TEST_CASE("cluster: the step by category adds up to the step and puts each kernel where it belongs") {
  auto byCategory = [](const ClusterStepEstimate& e) {
    std::map<std::string, double> m;
    double sum = 0;
    for (const auto& [category, seconds] : e.timeByCategory) m[category] = seconds, sum += seconds;
    CHECK(sum == relative(e.total));
    CHECK(e.timeByCategory.size() == 11);
    return m;
  };
  Compiled product = compileAllRanks(
      matmulModel("device_num: 8, training: true, precision: bf16_mixed", "preset: dgx-a100-80gb", "[[8, 1], [1, 1]]"));
  REQUIRE_MESSAGE(product.errors.empty(), product.errors);
  auto e = estimateClusterStep(product.global, product.options);
  REQUIRE(e);
  auto m = byCategory(*e);
  CHECK(m["gemm"] == relative(e->compute));
  CHECK(m["attention"] == 0);
  CHECK(m["elementwise_norms_and_copies"] == 0);
  CHECK(m["gradient_sync"] == relative(e->gradientSyncExposed));
  CHECK(m["optimizer"] == relative(e->optimizer));
  Compiled attention = compileAllRanks(R"(parallel: {device_num: 1, training: true, precision: bf16_mixed}
cluster: {preset: dgx-a100-80gb}
inputs:
  - {name: q, shape: [2, 8, 64, 16], dtype: float32}
  - {name: k, shape: [2, 8, 64, 16], dtype: float32}
  - {name: v, shape: [2, 8, 64, 16], dtype: float32}
ops:
  - {name: scores, type: BatchMatMul, inputs: [q, k], attrs: {transpose_b: true}}
  - {name: scaled, type: Mul, inputs: [scores, 0.25]}
  - {name: probs, type: Softmax, inputs: [scaled], attrs: {axis: -1}}
  - {name: ctx, type: BatchMatMul, inputs: [probs, v]}
  - {name: out, type: ReLU, inputs: [ctx]}
outputs: [out]
)");
  REQUIRE_MESSAGE(attention.errors.empty(), attention.errors);
  e = estimateClusterStep(attention.global, attention.options);
  REQUIRE(e);
  m = byCategory(*e);
  CHECK(m["gemm"] == 0);
  CHECK(m["attention"] > 0);
  CHECK(m["elementwise_norms_and_copies"] > 0);  // the ReLU
  CHECK(m["attention"] + m["elementwise_norms_and_copies"] == relative(e->compute));
  // Two stages: the Send/Receive on the critical path is `pipeline_transfers`, not collectives.
  Compiled piped = compileAllRanks(
      twoStageProducts("{device_num: 2, pipeline_stages: 2, micro_batches: 2, training: true, precision: bf16_mixed}"));
  REQUIRE_MESSAGE(piped.errors.empty(), piped.errors);
  e = estimateClusterStep(piped.global, piped.options);
  REQUIRE(e);
  m = byCategory(*e);
  CHECK(m["pipeline_transfers"] > 0);
  CHECK(m["collectives"] == 0);
  CHECK(m["pipeline_bubble"] > 0);
}

TEST_CASE("cluster: attention with sinks is one fused kernel: the sink column joined and sliced off on chip") {
  // GPT-OSS's sinks: scores [2, 8, 64, 64] joined with a column [2, 8, 64, 1] of each head's sink
  // logit, softmaxed, the keys' probabilities sliced back for the product with v. A fused kernel
  // (FlashAttention 3, cuDNN) takes the sink as an operand: none of it is saved or crosses HBM.
  Compiled c = compileAllRanks(R"(parallel: {device_num: 1, training: true, precision: bf16_mixed}
cluster: {preset: dgx-h100}
inputs:
  - {name: q, shape: [2, 8, 64, 16], dtype: float32}
  - {name: k, shape: [2, 8, 64, 16], dtype: float32}
  - {name: v, shape: [2, 8, 64, 16], dtype: float32}
  - {name: sink, shape: [2, 8, 64, 1], dtype: float32}
ops:
  - {name: scores, type: BatchMatMul, inputs: [q, k], attrs: {transpose_b: true}}
  - {name: scaled, type: Mul, inputs: [scores, 0.25]}
  - {name: with_sink, type: Concat, inputs: [scaled, sink], attrs: {axis: -1}}
  - {name: all, type: Softmax, inputs: [with_sink], attrs: {axis: -1}}
  - {name: probs, type: Slice, inputs: [all, [0, 0, 0, 0], [2, 8, 64, 64]]}
  - {name: ctx, type: BatchMatMul, inputs: [probs, v]}
outputs: [ctx]
)");
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  std::vector<bool> onChip = fusedAttentionValues(c.global);
  auto chip = [&](const char* name) { return static_cast<bool>(onChip[*c.global.findValue(name)]); };
  for (const char* v : {"scores", "scaled", "with_sink", "all", "probs"}) {
    CAPTURE(v);
    CHECK(chip(v));
  }
  CHECK_FALSE(chip("sink"));
  CHECK_FALSE(chip("ctx"));
  // Saved for the backward: q, k and v (32 KiB each in bf16) and the sink column, not the scores
  // or probabilities (2 x 8 x 64 x 64 x 2 = 131,072 bytes each, or more).
  double saved = estimateMemory(c.global, c.options).training->savedActivationBytes;
  CHECK(saved < 131072);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("cluster: fused attention's kernel seconds, derived by hand, against the unfused chain's") {
  // q, k, v [2, 8, 512, 64] float32 split 2 ways by batch: a rank's [8, 512, 64] each. Every
  // figure of the cluster written here (1e14 FLOP/s, 32 SMs, 1e12 B/s, efficiencies 1, 1 us a
  // kernel). Each product is 2 x 8 x 512 x 512 x 64 FLOPs; q k^T's output is 8 x 4 x 4 tiles of
  // 128 x 128 (4 full waves of 32), probs v's 8 x 8 x 1 tiles of 64 x 64 (2 full waves): at the
  // peak. Fused, the products read q, k, v (1 MiB each) and write ctx (1 MiB): under the math,
  // and the scale and softmax launch nothing. Unfused, the [8, 512, 512] scores (8 MiB) are
  // written, read and written by the scale, read and written by the softmax, read by the second
  // product: every kernel streams more than it computes.
  auto computeOf = [](const char* fused) {
    Compiled c = compileAllRanks(fmt::format(
        "parallel: {{device_num: 2, training: true}}\n"
        "cluster: {{devices_per_node: 2, peak_flops: {{fp32: 1e14}}, compute_units: 32, gemm_efficiency: 1, "
        "hbm_bandwidth: 1e12, memory_efficiency: 1, intra_node_bandwidth: 1e11, nics_per_node: 1, nic_gbps: 100, "
        "kernel_launch_seconds: 1e-6, fused_attention: {}}}\n"
        "inputs:\n  - {{name: q, shape: [2, 8, 512, 64], dtype: float32}}\n  - {{name: k, shape: [2, 8, 512, 64], dtype: "
        "float32}}\n"
        "  - {{name: v, shape: [2, 8, 512, 64], dtype: float32}}\n"
        "parameters:\n  - {{name: scale, shape: [], dtype: float32}}\n"
        "ops:\n  - {{name: scores, type: BatchMatMul, inputs: [q, k], attrs: {{transpose_b: true}}, in_strategy: [[2, 1, 1, 1], "
        "[2, 1, 1, 1]]}}\n"
        "  - {{name: scaled, type: Mul, inputs: [scores, scale]}}\n  - {{name: probs, type: Softmax, inputs: [scaled], attrs: "
        "{{axis: -1}}}}\n"
        "  - {{name: ctx, type: BatchMatMul, inputs: [probs, v]}}\noutputs: [ctx]\n",
        fused));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    return estimateClusterStep(c.global, c.options)->compute;
  };
  const double MiB = 1024 * 1024, launch = 1e-6;
  const double product = 2.0 * 8 * 512 * 512 * 64 / 1e14;
  const double fusedForward = 2 * (product + launch);
  const double unfusedForward = (2 * MiB + 8 * MiB) / 1e12 + launch     // q k^T: reads q, k; writes the scores
                                + (16 * MiB + 4) / 1e12 + launch        // the scale: the scores in and out, the scalar
                                + 16 * MiB / 1e12 + launch              // the softmax
                                + (8 * MiB + 2 * MiB) / 1e12 + launch;  // probs v: reads probs, v; writes ctx
  // Training: the backward computes twice the forward, and the fused kernel's recomputes the
  // scores' product once more (its launch too).
  CHECK(computeOf("true") == relative(3 * fusedForward + (product + launch)).epsilon(1e-9));
  CHECK(computeOf("false") == relative(3 * unfusedForward).epsilon(1e-6));
}

TEST_CASE("cluster: a fused kernel reads a grouped-query attention's keys and values unrepeated: the repeat launches nothing") {
  // 4 query heads over 2 key-value heads (transformers' repeat_kv: a Reshape to [b, 2, 1, s, d],
  // a BroadcastTo [b, 2, 2, s, d], a Reshape to [b, 4, s, d]). FlashAttention reads each
  // key-value head for its group of query heads: the repeated copies are never written, so the
  // step is that of the same attention given keys and values of 4 heads, where the repeat's two
  // broadcasts would each add a kernel (a launch and 2 x 64 KiB written). Unfused (eager
  // attention), the copies are made.
  auto computeOf = [](bool grouped, const char* fused) {
    const std::string kv = grouped ? "[1, 2, 128, 64]" : "[1, 4, 128, 64]";
    std::string ops =
        "ops:\n  - {name: scores, type: BatchMatMul, inputs: [q, K], attrs: {transpose_b: true}}\n"
        "  - {name: scaled, type: Mul, inputs: [scores, 0.125]}\n  - {name: probs, type: Softmax, inputs: [scaled], "
        "attrs: {axis: -1}}\n  - {name: ctx, type: BatchMatMul, inputs: [probs, V]}\n";
    if (grouped) {
      for (const char* x : {"k", "v"})
        ops += fmt::format(
            "  - {{name: {0}_e, type: Reshape, inputs: [{0}, [1, 2, 1, 128, 64]]}}\n"
            "  - {{name: {0}_b, type: BroadcastTo, inputs: [{0}_e, [1, 2, 2, 128, 64]]}}\n"
            "  - {{name: {0}_rep, type: Reshape, inputs: [{0}_b, [1, 4, 128, 64]]}}\n",
            x);
      ops.replace(ops.find("[q, K]"), 6, "[q, k_rep]");
      ops.replace(ops.find("[probs, V]"), 10, "[probs, v_rep]");
    } else {
      ops.replace(ops.find("[q, K]"), 6, "[q, k]");
      ops.replace(ops.find("[probs, V]"), 10, "[probs, v]");
    }
    Compiled c = compileAllRanks(fmt::format(
        "parallel: {{device_num: 1, training: true}}\n"
        "cluster: {{devices_per_node: 1, peak_flops: {{fp32: 1e14}}, compute_units: 32, gemm_efficiency: 1, "
        "hbm_bandwidth: 1e12, memory_efficiency: 1, intra_node_bandwidth: 1e11, nics_per_node: 1, nic_gbps: 100, "
        "kernel_launch_seconds: 1e-6, fused_attention: {}}}\n"
        "inputs:\n  - {{name: q, shape: [1, 4, 128, 64], dtype: float32}}\n  - {{name: k, shape: {}, dtype: float32}}\n"
        "  - {{name: v, shape: {}, dtype: float32}}\n{}outputs: [ctx]\n",
        fused, kv, kv, ops));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    return estimateClusterStep(c.global, c.options)->compute;
  };
  CHECK(computeOf(true, "true") == computeOf(false, "true"));
  CHECK(computeOf(true, "false") > computeOf(false, "false") + 2 * 1e-6);
}

}  // namespace irc::test
