// The low-precision recipes (plan/precision.h, docs/cluster.md "Precision recipes") on one linear
// layer, every expected figure derived by hand from the preset's datasheet figures: its GEMMs at
// the FP8/FP4 peak on quantized operands, its casts as streaming kernels, the weight's cast once a
// step, and the bytes the recipe keeps.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "cost/cluster_presets.h"
#include "cost/linear_layers.h"
#include "cost/memory_estimate.h"
#include "cost/step_cost.h"
#include "cost/stage_estimate.h"
#include "cost/step_schedule.h"
#include "plan/stage_view.h"
#include "cost/collective_time.h"
#include "tests/approx.h"
#include "tests/model_util.h"
#include "tests/pipeline_util.h"

namespace irc::test {
namespace {

// x [4096, 8192] through `hidden` (a linear layer), then `head` (the output layer: its result is
// the graph's output, so every recipe keeps it 16-bit).
std::string twoLinears(const std::string& precision, const std::string& preset) {
  return fmt::format(
      "parallel: {{device_num: 1, training: true, optimizer: adamw, precision: {}}}\n"
      "cluster: {{preset: {}}}\n"
      "inputs: [{{name: x, shape: [4096, 8192], dtype: float32}}]\n"
      "parameters: [{{name: w, shape: [8192, 8192], dtype: float32}}, {{name: v, shape: [8192, 8192], dtype: float32}}]\n"
      "ops:\n"
      "  - {{name: hidden, type: MatMul, inputs: [x, w]}}\n"
      "  - {{name: head, type: MatMul, inputs: [hidden, v]}}\n"
      "outputs: [head]\n",
      precision, preset);
}

struct HiddenTimes {
  double forward = 0, backward = 0, perStep = 0;
};

HiddenTimes hiddenLayer(const Compiled& c) {
  HiddenTimes t;
  forEachOpTime(c.global, c.options, [&](const Op& op, const StepTime& s) {
    if (op.name != "hidden") return;
    t = {s.compute, s.backwardCompute, s.perStepCompute};
  });
  return t;
}

// Relative to the figure, to nine digits (tests/approx.h).
doctest::Approx near(double v) { return relative(v).epsilon(1e-9); }

constexpr double kLaunch = 4e-6;
constexpr double kElements = 4096.0 * 8192;  // x, and the result y: [4096, 8192]
constexpr double kWeight = 8192.0 * 8192;

}  // namespace

TEST_CASE("precision recipes: which products are linear layers") {
  Compiled c = compileAllRanks(twoLinears("fp8_tensorwise", "dgx-h100"));
  std::vector<int> weight = linearLayerWeightOperands(c.global);
  for (OpId id : c.global.order) {
    const Op& op = c.global.op(id);
    if (op.name == "hidden") CHECK(weight[id] == 1);
    if (op.name == "head") CHECK(weight[id] == -1);  // the output layer stays 16-bit
  }
}

TEST_CASE("precision recipes: a pipeline stage's products before its Send are linear layers") {
  // mm0 on stage 0 feeds mm1 on stage 1 (the output layer). Stage 0's view returns what it
  // sends, which is not the model's output: mm0 stays a linear layer there, so the stage keeps
  // w0's row- and column-wise FP8 copies (a byte an element each) and mm0's input in FP8.
  Compiled c =
      compileAllRanks(twoStageProducts("{device_num: 2, pipeline_stages: 2, micro_batches: 2, training: true, optimizer: adamw, "
                                       "precision: fp8_tensorwise}"));
  Graph view = c.global;
  keepPipelineStage(view, 0);
  std::vector<int> weight = linearLayerWeightOperands(view);
  for (OpId id : view.order)
    if (view.op(id).name == "mm0") CHECK(weight[id] == 1);
  MemoryEstimate stage0 = estimateStageMemory(c.global, c.options, 0);
  REQUIRE(stage0.training);
  CHECK(stage0.training->quantizedWeightBytes == 2.0 * 1024 * 1024);
}

// A SwiGLU block, x [1024, 512] -> gate, up [1024, 1024] -> SiLU(gate) * up -> down [1024, 512]
// -> head (the output layer), in `precision` on one H100.
std::string swiGlu(const std::string& precision) {
  return fmt::format(
      "parallel: {{device_num: 1, training: true, optimizer: adamw, precision: {}}}\n"
      "cluster: {{preset: dgx-h100}}\n"
      "inputs: [{{name: x, shape: [1024, 512], dtype: float32}}]\n"
      "parameters:\n"
      "  - {{name: wg, shape: [512, 1024], dtype: float32}}\n"
      "  - {{name: wu, shape: [512, 1024], dtype: float32}}\n"
      "  - {{name: wd, shape: [1024, 512], dtype: float32}}\n"
      "  - {{name: wh, shape: [512, 512], dtype: float32}}\n"
      "ops:\n"
      "  - {{name: gate, type: MatMul, inputs: [x, wg]}}\n"
      "  - {{name: up, type: MatMul, inputs: [x, wu]}}\n"
      "  - {{name: act, type: SiLU, inputs: [gate]}}\n"
      "  - {{name: gated, type: Mul, inputs: [act, up]}}\n"
      "  - {{name: down, type: MatMul, inputs: [gated, wd]}}\n"
      "  - {{name: head, type: MatMul, inputs: [down, wh]}}\n"
      "outputs: [head]\n",
      precision);
}

TEST_CASE("precision recipes: the gated unit as the recipe's fused kernel keeps its inputs, not SiLU's result") {
  constexpr double kMiB = 1024.0 * 1024;
  // Saved for backward, by hand: x once in FP8 for gate's and up's weight gradients (1024 x 512,
  // a byte each: 0.5 MiB); gate (SiLU's input) and up (the Mul's) at 16 bits, 2 MiB each; gated
  // in FP8 for down's (1 MiB); down at 16 bits for the head, a 16-bit product (1 MiB); the loss's
  // log-softmax over head's 1024 x 512 (1 MiB). The fused kernel computes SiLU(gate) again in
  // its backward: act's 2 MiB are made again, not kept.
  Compiled c = compileAllRanks(swiGlu("fp8_tensorwise"));
  TrainingMemory fp8 = *estimateMemory(c.global, c.options).training;
  CHECK(fp8.savedActivationBytes == 7.5 * kMiB);
  CHECK(fp8.recomputedActivationBytes == 2 * kMiB);
  // In bf16_mixed the graph runs op by op, as torch's autograd keeps it: act is kept, and x,
  // gated at 16 bits (1 + 2 + 2 + 2 + 2 + 1 + 1 MiB).
  Compiled bf16 = compileAllRanks(swiGlu("bf16_mixed"));
  TrainingMemory mixed = *estimateMemory(bf16.global, bf16.options).training;
  CHECK(mixed.savedActivationBytes == 11 * kMiB);
  CHECK(mixed.recomputedActivationBytes == 0);
}

TEST_CASE("precision recipes: a sequence-parallel linear layer keeps its rank's tokens and gathers them again") {
  constexpr double kKiB = 1024;
  // scale keeps x's 1024 tokens split over the 2 ranks; proj needs them whole (its weight split
  // by columns): an AllGather between. As Transformer Engine's sequence-parallel Linear runs it,
  // proj keeps its rank's 512 tokens cast (512 x 512, a byte each: 256 KiB), not the gathered
  // 1024 (512 KiB), which its backward gathers again.
  const std::string model =
      "parallel: {device_num: 2, training: true, optimizer: adamw, precision: fp8_tensorwise}\n"
      "cluster: {preset: dgx-h100}\n"
      "inputs: [{name: x, shape: [1024, 512], dtype: float32}]\n"
      "parameters:\n"
      "  - {name: s, shape: [512], dtype: float32}\n"
      "  - {name: w, shape: [512, 1024], dtype: float32}\n"
      "  - {name: v, shape: [1024, 512], dtype: float32}\n"
      "ops:\n"
      "  - {name: scale, type: Mul, inputs: [x, s], in_strategy: [[2, 1], [1]]}\n"
      "  - {name: proj, type: MatMul, inputs: [scale, w], in_strategy: [[1, 1], [1, 2]]}\n"
      "  - {name: head, type: MatMul, inputs: [proj, v], in_strategy: [[1, 2], [2, 1]]}\n"
      "outputs: [head]\n";
  Compiled c = compileAllRanks(model);
  TrainingMemory m = *estimateMemory(c.global, c.options).training;
  // Also kept: x's 512 local tokens at 16 bits for s's gradient (512 KiB); proj's 1024 x 512
  // local columns at 16 bits for the head (1 MiB); the loss's log-softmax over head's 1024 x 512
  // (1 MiB).
  CHECK(m.savedActivationBytes == (256 + 512 + 1024 + 1024) * kKiB);
  CHECK(m.recomputedActivationBytes == 512 * kKiB);
}

TEST_CASE("precision recipes: one linear layer's seconds, forward and backward, per recipe") {
  // H100 SXM: 1,979 TFLOP/s FP8 dense, 3.35 TB/s at 85 %, 0.75 of the peak for a GEMM; a
  // 4096 x 8192 output on 132 SMs fills its waves best in 64 x 64 tiles: 8192 tiles in 63 waves
  // of 132 (8316 slots; 128 x 128 tiles leave 2048 of 2112).
  const double hbm = 3.35e12 * 0.85, wave = 8192.0 / 8316, flops = 2 * 4096.0 * 8192 * 8192;
  auto stream = [&](double bytes) { return bytes / hbm + kLaunch; };
  SUBCASE("fp8_tensorwise: an amax pass before every cast") {
    HiddenTimes t = hiddenLayer(compileAllRanks(twoLinears("fp8_tensorwise", "dgx-h100")));
    // GEMM: FP8 operands (x and w, a byte each), BF16 result; compute-bound.
    double gemm = std::max(flops / (1979e12 * 0.75 * wave), (kElements + kWeight + 2 * kElements) / hbm) + kLaunch;
    // x's cast: read 2 bytes, write the row-wise and column-wise copies (a byte each), and the
    // amax pass (read 2 bytes) before it.
    double cast = stream(kElements * (2 + 2)) + stream(kElements * 2);
    CHECK(t.forward == near(gemm + cast));
    // Backward: the input- and weight-gradient GEMMs, and the result's gradient cast the same way.
    CHECK(t.backward == near(2 * gemm + cast));
    // Once a step: the weight's cast, its amax pass included.
    CHECK(t.perStep == near(stream(kWeight * 4) + stream(kWeight * 2)));
  }
  SUBCASE("fp8_delayed: the scale from the amax history, no extra pass") {
    HiddenTimes t = hiddenLayer(compileAllRanks(twoLinears("fp8_delayed", "dgx-h100")));
    double gemm = flops / (1979e12 * 0.75 * wave) + kLaunch;
    CHECK(t.forward == near(gemm + stream(kElements * 4)));
    CHECK(t.backward == near(2 * gemm + stream(kElements * 4)));
    CHECK(t.perStep == near(stream(kWeight * 4)));
  }
  SUBCASE("fp8_blockwise: a float32 scale per 128 elements of x, per 128 x 128 block of w") {
    HiddenTimes t = hiddenLayer(compileAllRanks(twoLinears("fp8_blockwise", "dgx-h100")));
    double gemm = flops / (1979e12 * 0.75 * wave) + kLaunch;
    CHECK(t.forward == near(gemm + stream(kElements * (2 + 2 * (1 + 4.0 / 128)))));
    CHECK(t.perStep == near(stream(kWeight * (2 + 2 * (1 + 4.0 / 16384)))));
  }
  SUBCASE("mxfp8 on a B200: an E8M0 scale per 32 elements, Blackwell's 4,500 TFLOP/s") {
    // 148 SMs: 2048 tiles of 128 x 128 in 14 waves of 148 (2072 slots); HBM 8 TB/s.
    const double b200 = 8e12 * 0.85, bWave = 2048.0 / 2072;
    HiddenTimes t = hiddenLayer(compileAllRanks(twoLinears("mxfp8", "dgx-b200")));
    double gemm = flops / (4500e12 * 0.75 * bWave) + kLaunch;
    CHECK(t.forward == near(gemm + kElements * (2 + 2 * (1 + 1.0 / 32)) / b200 + kLaunch));
    CHECK(t.backward == near(2 * gemm + kElements * (2 + 2 * (1 + 1.0 / 32)) / b200 + kLaunch));
  }
  SUBCASE("nvfp4 on a B200: half a byte and an E4M3 scale per 16, amax and Hadamard passes") {
    const double b200 = 8e12 * 0.85, bWave = 2048.0 / 2072;
    HiddenTimes t = hiddenLayer(compileAllRanks(twoLinears("nvfp4", "dgx-b200")));
    double gemm = flops / (9000e12 * 0.75 * bWave) + kLaunch;
    auto b = [&](double bytes) { return bytes / b200 + kLaunch; };
    double cast = b(kElements * (2 + 2 * (0.5 + 1.0 / 16))) + b(kElements * 2) + b(kElements * 4);
    CHECK(t.forward == near(gemm + cast));
    CHECK(t.perStep == near(b(kWeight * (2 + 2 * (0.5 + 1.0 / 256))) + b(kWeight * 2) + b(kWeight * 4)));
  }
  SUBCASE("bf16_mixed: no casts, the backward twice the forward") {
    HiddenTimes t = hiddenLayer(compileAllRanks(twoLinears("bf16_mixed", "dgx-h100")));
    CHECK(t.backward == near(2 * t.forward));
    CHECK(t.perStep == 0);
  }
}

TEST_CASE("precision recipes: one linear layer's bytes") {
  auto memory = [](const std::string& precision) {
    Compiled c = compileAllRanks(twoLinears(precision, "dgx-h100"));
    return *estimateMemory(c.global, c.options).training;
  };
  TrainingMemory wide = memory("bf16_mixed"), fp8 = memory("fp8_tensorwise"), block = memory("fp8_blockwise");
  // The hidden layer's weight cast row- and column-wise, a byte each; the head's is not.
  CHECK(fp8.quantizedWeightBytes == 2 * kWeight);
  CHECK(wide.quantizedWeightBytes == 0);
  // x is saved for the hidden layer's weight gradient only: as its FP8 copy, a byte an element
  // instead of two (the head's input, the hidden layer's result, stays BF16).
  CHECK(wide.savedActivationBytes - fp8.savedActivationBytes == near(kElements));
  // DeepSeek-V3's BF16 moments: 2 x 2 bytes an element instead of 2 x 4.
  CHECK(block.optimizerStateBytes == near(wide.optimizerStateBytes / 2));
  CHECK(block.quantizedWeightBytes == near(2 * kWeight * (1 + 4.0 / 16384)));
}

TEST_CASE("precision recipes: a recipe the device cannot run is a located error") {
  std::string errors = modelErrors(twoLinears("fp8_tensorwise", "dgx-a100-80gb"));
  CHECK(errors.find("error: precision fp8_tensorwise runs the linear layers on FP8 tensor cores; dgx-a100-80gb's device has "
                    "none (no peak_flops.fp8) (valid here: fp32, bf16_mixed, fp16_mixed)") != std::string::npos);
  CHECK(modelErrors(twoLinears("mxfp8", "dgx-h100")).find("scales its blocks in Blackwell's tensor cores") != std::string::npos);
  CHECK(modelErrors(twoLinears("nvfp4", "dgx-b200")).empty());
}

TEST_CASE("presets: the visible memory and the NVLink domain") {
  CHECK(clusterPreset("dgx-h100")->device.hbmBytes == 81559.0 * 1024 * 1024);
  CHECK(clusterPreset("dgx-a100-80gb")->device.hbmBytes == 80.0 * 1024 * 1024 * 1024);
  const ClusterDescription nvl = *clusterPreset("gb200-nvl72");
  CHECK(nvl.domainDevices() == 72);
  CHECK(nvl.devicesPerNode == 4);
  // TP 8 across two trays stays on NVLink; a group of two racks crosses the network, each GPU at
  // its own 400 Gb/s NIC (90 % of line rate).
  DeviceMatrix mesh = DeviceMatrix::unnamed({2, 72});
  CHECK(linkOf(groupSpan(mesh, {1}, nvl.domainDevices()), nvl).busBandwidth == near(900e9));
  GroupSpan across = groupSpan(mesh, {0}, nvl.domainDevices());
  CHECK(across.nodes == 2);
  CHECK(linkOf(across, nvl).busBandwidth == near(50e9 * 0.9));
}

}  // namespace irc::test
