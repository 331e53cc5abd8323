// Will it fit (cost/memory_estimate.h): the FFN's peaks derived by hand, views, the optimizer's
// states, and the budget warning.
#include <algorithm>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dumps/report.h"
#include "ir/byte_size.h"
#include "cost/memory_estimate.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace irc::test {
namespace {

ParallelSettings settings(bool training, Optimizer optimizer = Optimizer::AdamW, int optimizerParallelLevel = 0) {
  ParallelSettings s;
  s.training = training;
  s.optimizer = optimizer;
  s.parallelOptimizerLevel = optimizerParallelLevel;
  return s;
}

// As PyTorch trains: gradients freed between steps, the optimizer a loop over the parameters.
ParallelSettings torchSettings(Optimizer optimizer = Optimizer::AdamW) {
  ParallelSettings s = settings(true, optimizer);
  s.gradientBuffer = GradientBuffer::Freed;
  s.optimizerKernels = OptimizerKernels::ForLoop;
  return s;
}

std::string ffnModel(const std::string& extra) {
  std::string text = readFile(std::string(IRC_SOURCE_DIR) + "/examples/ffn.yaml");
  text.replace(text.find("  search_mode: sharding_propagation\n"), 35, "  search_mode: sharding_propagation\n" + extra);
  return text;
}

}  // namespace

TEST_CASE("memory: the FFN's inference peak and training step, derived by hand") {
  // Rank 0 of the FFN (x split 2 ways, the weights 4 ways), float32. Parameters 64x16 + 16 +
  // 16x64 + 16 = 2080 elements = 8320 B; x's slice 32x64 = 8192 B; matmul, add, relu
  // [32, 16] = 2048 B each; matmul2's partial [32, 64] = 8192 B and its AllReduce 8192 B; the
  // StridedSlice and add2 [32, 16] = 2048 B each.
  Compiled c = compileAllRanks(ffnModel(""));
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  MemoryEstimate m = estimateMemory(c.global, settings(false, Optimizer::AdamW));
  // Inference: 8320 + 8192 (x) -> matmul frees x; the peak is at the AllReduce, when matmul2's
  // partial result and its sum are both live: 8320 + 8192 + 8192 = 24704.
  CHECK(m.inference.peakBytes == 24704);
  CHECK(m.inference.peakAt == "matmul2.forward_op.0");
  CHECK(m.inference.parameterBytes == 8320);
  CHECK(m.inference.activationBytes == 8192);
  CHECK(m.inference.communicationBytes == 8192);
  CHECK(!m.training);

  // Training (AdamW) as torch runs it (gradients freed between steps, a loop over the
  // parameters): matmul keeps x (8192), relu its result (2048, which matmul2 reads too); the
  // loss keeps a log-softmax of add2 (2048): 12288 saved. Forward peak at the AllReduce: 8320 +
  // 8192 + 2048 + 8192 + 8192 = 34944. Backward: at the AllReduce's backward, add2's bias
  // gradient (64), the StridedSlice's input gradient (8192 on top of the add2 gradient freed) and
  // matmul2's output gradient (8192) are live with the saved and the outputs: 8320 + 8192 + 2048
  // + 2048 + 64 + 8192 + 8192 = 37056. After backward: parameters, their gradients (8320) and
  // add2 (2048); the update makes two float32 moments per element (16640) and the loop's two
  // temporaries of the largest parameter (dense1.weight's 64x16 slice: 2 x 4096 = 8192): 43520,
  // the first step's peak. From the second step on the moments are there from the start: 37056 +
  // 16640 = 53696 in backward.
  Compiled t = compileAllRanks(ffnModel("  training: true\n"));
  REQUIRE_MESSAGE(t.errors.empty(), t.errors);
  MemoryEstimate tm = estimateMemory(t.global, torchSettings());
  REQUIRE(tm.training);
  CHECK(tm.training->savedActivationBytes == 12288);
  CHECK(tm.training->gradientBytes == 8320);
  CHECK(tm.training->optimizerStateBytes == 16640);
  CHECK(tm.training->optimizerTemporaryBytes == 8192);
  CHECK(tm.training->outputBytes == 2048);
  CHECK(tm.training->stepLiveBytes == 43520);
  CHECK(tm.training->firstStepPeakBytes == 43520);
  CHECK(tm.training->firstStepPeakPhase == "optimizer step");
  CHECK(tm.training->firstStepPeakAt.empty());
  CHECK(tm.training->peakBytes == 53696);
  CHECK(tm.training->peakPhase == "backward");
  CHECK(tm.training->peakAt == "matmul2.forward_op.0");
  CHECK(tm.training->residentBytes == 8320 + 16640);
  CHECK(!tm.training->gradientsResident);
  // Inference of a training graph is the same program: its mirrors are views of the weights.
  CHECK(tm.inference.peakBytes == 24704);
  // SGD keeps no state and the steady state is the first step; momentum keeps one float32 per
  // element (8320): 37056 + 8320 from the second step on, its first update 18688 + 8320.
  // Neither makes temporaries.
  TrainingMemory sgd = *estimateMemory(t.global, torchSettings(Optimizer::Sgd)).training;
  CHECK(sgd.optimizerStateBytes == 0);
  CHECK(sgd.peakBytes == 37056);
  CHECK(sgd.firstStepPeakBytes == 37056);
  TrainingMemory momentum = *estimateMemory(t.global, torchSettings(Optimizer::Momentum)).training;
  CHECK(momentum.optimizerStateBytes == 8320);
  CHECK(momentum.optimizerTemporaryBytes == 0);
  CHECK(momentum.peakBytes == 37056 + 8320);
  CHECK(momentum.firstStepPeakBytes == 37056);
  // torch's foreach kernels make one copy of every parameter (2080 elements, 8320 B) in the
  // update: 35328 + 8320 = 43648, still under the backward's peak.
  ParallelSettings foreach = torchSettings();
  foreach
    .optimizerKernels = OptimizerKernels::Foreach;
  TrainingMemory f = *estimateMemory(t.global, foreach).training;
  CHECK(f.optimizerTemporaryBytes == 8320);
  CHECK(f.stepLiveBytes == 43648);
  CHECK(f.peakBytes == 53696);
}

TEST_CASE("memory: a persistent gradient buffer and accumulated micro-batches hold every gradient from the step's start") {
  // The FFN of the test above. Megatron-LM, DeepSpeed and MindSpore keep the gradients (8320 B)
  // in a buffer for the whole run (a YAML model's default): under every point of the walk, less
  // what the walk itself made by then. At the AllReduce's backward the walk had made add2's bias
  // gradient (64): 37056 - 64 + 8320 = 45312 in the first step, + 16640 moments = 61952 after.
  // The forward's peak at the AllReduce: 34944 + 8320 = 43264, under it. The update: 35328, a
  // fused kernel makes no temporaries.
  Compiled t = compileAllRanks(ffnModel("  training: true\n"));
  REQUIRE_MESSAGE(t.errors.empty(), t.errors);
  TrainingMemory kept = *estimateMemory(t.global, settings(true)).training;
  CHECK(kept.gradientBuffer == GradientBuffer::Persistent);
  CHECK(kept.gradientsResident);
  CHECK(kept.optimizerTemporaryBytes == 0);
  CHECK(kept.stepLiveBytes == 35328);
  CHECK(kept.firstStepPeakBytes == 45312);
  CHECK(kept.peakBytes == 61952);
  CHECK(kept.peakAt == "matmul2.forward_op.0");
  CHECK(kept.residentBytes == 8320 + 8320 + 16640);
  CHECK(kept.forwardLiveAtOp.size() == kept.firstForwardLiveAtOp.size());
  CHECK(*std::max_element(kept.forwardLiveAtOp.begin(), kept.forwardLiveAtOp.end()) == 43264 + 16640);
  // torch with two micro-batches accumulating: the second starts with the first's gradients,
  // the same figures but the update's temporaries (35328 + 8192).
  ParallelSettings accumulating = torchSettings();
  accumulating.microBatches = 2;
  TrainingMemory acc = *estimateMemory(t.global, accumulating).training;
  CHECK(acc.gradientsResident);
  CHECK(acc.firstStepPeakBytes == 45312);
  CHECK(acc.peakBytes == 61952);
  CHECK(acc.stepLiveBytes == 43520);
  // Mixed precision: the float32 master weights (2080 x 4 = 8320) exist from the optimizer's
  // construction, so the first step holds them too; weights, activations and gradients are
  // 16-bit, the moments float32 (16640).
  ParallelSettings mixed = settings(true);
  mixed.precision = Precision::Bf16Mixed;
  TrainingMemory m = *estimateMemory(t.global, mixed).training;
  CHECK(m.masterWeightBytes == 8320);
  CHECK(m.optimizerStateBytes == 16640);
  CHECK(m.lossLiveBytes - m.firstLossLiveBytes == 16640);
  CHECK(m.residentBytes == m.parameterBytes + m.gradientBytes + 8320 + 16640);
}

TEST_CASE("memory: ops computed from inputs alone have no backward; a product keeps a factor only for a partner that trains") {
  // x (4x8 float32, 128 B) -> Sigmoid s -> Mul t = s * x -> MatMul y = t w. Nothing before the
  // MatMul reads a parameter, so torch records no backward for Sigmoid or Mul and keeps neither
  // s nor x for them; the MatMul keeps t for w's gradient (w itself is resident). Saved: t and
  // the loss's log-softmax of y, 256 B (512 when every op kept its operands: s, x, t and y's).
  const std::string yaml =
      "parallel: {device_num: 1, training: true}\n"
      "inputs:\n  - {name: x, shape: [4, 8], dtype: float32}\n"
      "parameters:\n  - {name: w, shape: [8, 8], dtype: float32}\n"
      "ops:\n  - {name: s, type: Sigmoid, inputs: [x]}\n"
      "  - {name: t, type: Mul, inputs: [s, x]}\n"
      "  - {name: y, type: MatMul, inputs: [t, w]}\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  TrainingMemory t = *estimateMemory(c.global, settings(true, Optimizer::Sgd)).training;
  CHECK(t.savedActivationBytes == 256);
  // Backward makes w's gradient (256 B) and no gradient for t, s or x.
  CHECK(t.gradientBytes == 256);
}

TEST_CASE("memory: fused attention keeps the scores and probabilities on chip and saves one float32 per row") {
  // examples/attention.yaml's block (4 heads, 16 tokens, head dim 16) on one device, then with its
  // heads split 4 ways. Unfused, Softmax saves its probabilities for backward ([4, 16, 16] float32,
  // 4,096 B; the scores' Mul by a constant saves nothing) and the context product saves them
  // again (the same buffer). Fused (FlashAttention), what the kernel saves instead is the
  // log-sum-exp of each query's scores: 4 heads x 16 queries x 4 B = 256 B; 3,840 B less. With
  // the heads split 4 ways a rank holds one head: 1,024 B against 64 B, 960 B less.
  std::string text = readFile(std::string(IRC_SOURCE_DIR) + "/examples/attention.yaml");
  auto model = [&](int devices, bool fused) {
    std::string m = text;
    m.replace(m.find("device_num: 8"), 13, fmt::format("device_num: {}\n  training: true", devices));
    m.replace(m.find("in_strategy: [[2, 1], [1, 4]]"), 29, fmt::format("in_strategy: [[1, 1], [1, {}]]", devices));
    return m + fmt::format("cluster: {{preset: dgx-a100-80gb, fused_attention: {}}}\n", fused ? "true" : "false");
  };
  for (auto [devices, saving] : {std::pair<int, double>{1, 4096 - 256}, {4, 1024 - 64}}) {
    CAPTURE(devices);
    Compiled unfused = compileAllRanks(model(devices, false)), fused = compileAllRanks(model(devices, true));
    REQUIRE_MESSAGE(unfused.errors.empty(), unfused.errors);
    REQUIRE_MESSAGE(fused.errors.empty(), fused.errors);
    TrainingMemory a = *estimateMemory(unfused.global, unfused.options).training;
    TrainingMemory b = *estimateMemory(fused.global, fused.options).training;
    CHECK(a.savedActivationBytes - b.savedActivationBytes == saving);
    CHECK(a.peakBytes - b.peakBytes == saving);
  }
}

TEST_CASE("memory: a fused grouped-query attention saves its keys and values at their own heads, not repeated") {
  // q [1, 4, 8, 16] over keys and values of 2 heads [1, 2, 8, 16], each scaled by a trained
  // [16] gain, float32, one device, on a stack that fuses attention. Saved for backward, by hand:
  // each gain's Mul its activation operand (x 2,048 B, kx and vx 1,024 B each); the scores'
  // product q (2,048) and its keys; the context's product the softmax's statistic (4 heads x 8
  // rows x 4 B = 128) and its values; the loss its log-softmax over ctx (2,048). The kernel reads
  // the 2 key-value heads itself (the repeat to 4 heads is a view of them): the keys and values
  // saved are k and v, 1,024 B each — 10,368 B in all, where the repeated copies would be 2,048
  // each (12,416).
  const std::string model =
      "parallel: {device_num: 1, training: true}\ncluster: {preset: dgx-h100}\n"
      "inputs:\n  - {name: x, shape: [1, 4, 8, 16], dtype: float32}\n  - {name: kx, shape: [1, 2, 8, 16], dtype: float32}\n"
      "  - {name: vx, shape: [1, 2, 8, 16], dtype: float32}\n"
      "parameters:\n  - {name: wq, shape: [16], dtype: float32}\n  - {name: wk, shape: [16], dtype: float32}\n"
      "  - {name: wv, shape: [16], dtype: float32}\n"
      "ops:\n  - {name: q, type: Mul, inputs: [x, wq]}\n  - {name: k, type: Mul, inputs: [kx, wk]}\n"
      "  - {name: v, type: Mul, inputs: [vx, wv]}\n"
      "  - {name: k_e, type: Reshape, inputs: [k, [1, 2, 1, 8, 16]]}\n"
      "  - {name: k_b, type: BroadcastTo, inputs: [k_e, [1, 2, 2, 8, 16]]}\n"
      "  - {name: k_rep, type: Reshape, inputs: [k_b, [1, 4, 8, 16]]}\n"
      "  - {name: v_e, type: Reshape, inputs: [v, [1, 2, 1, 8, 16]]}\n"
      "  - {name: v_b, type: BroadcastTo, inputs: [v_e, [1, 2, 2, 8, 16]]}\n"
      "  - {name: v_rep, type: Reshape, inputs: [v_b, [1, 4, 8, 16]]}\n"
      "  - {name: scores, type: BatchMatMul, inputs: [q, k_rep], attrs: {transpose_b: true}}\n"
      "  - {name: scaled, type: Mul, inputs: [scores, 0.25]}\n  - {name: probs, type: Softmax, inputs: [scaled], attrs: {axis: "
      "-1}}\n"
      "  - {name: context, type: BatchMatMul, inputs: [probs, v_rep]}\noutputs: [context]\n";
  Compiled c = compileAllRanks(model);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  TrainingMemory m = *estimateMemory(c.global, c.options).training;
  CHECK(m.savedActivationBytes == 2048 + 1024 + 1024 + 2048 + 1024 + 128 + 1024 + 2048);
}

TEST_CASE("memory: a bias added to the product it alone reads is torch's addmm, one buffer; read twice, two") {
  // x (4x2 float32, 32 B) -> MatMul w (2x8) -> h (128 B) -> Add b (8) -> y. Parameters 64 + 32 =
  // 96 B. At the MatMul x and h are live: 96 + 32 + 128 = 256. The Add writes into h's buffer
  // (torch's Linear runs addmm, or adds the bias in place): 96 + 128 = 224 there, so the peak is
  // the MatMul's 256 (352 if y were a buffer of its own).
  const std::string linear =
      "parallel: {device_num: 1}\n"
      "inputs:\n  - {name: x, shape: [4, 2], dtype: float32}\n"
      "parameters:\n  - {name: w, shape: [2, 8], dtype: float32}\n  - {name: b, shape: [8], dtype: float32}\n"
      "ops:\n  - {name: h, type: MatMul, inputs: [x, w]}\n"
      "  - {name: y, type: Add, inputs: [h, b]}\n";
  Compiled c = compileAllRanks(linear + "outputs: [y]\n");
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  MemoryEstimate m = estimateMemory(c.global, settings(false));
  CHECK(m.inference.peakBytes == 256);
  CHECK(m.inference.peakAt == "h");
  // The graph also returns h: the product stays, and the biased result needs its own 128 B.
  Compiled both = compileAllRanks(linear + "outputs: [y, h]\n");
  REQUIRE_MESSAGE(both.errors.empty(), both.errors);
  MemoryEstimate m2 = estimateMemory(both.global, settings(false));
  CHECK(m2.inference.peakBytes == 352);
  CHECK(m2.inference.peakAt == "y");
}

TEST_CASE("memory: a weight's Transpose is a view (torch's weight.t()), in training read through its mirror too") {
  // x (4x8 float32, 128 B) -> MatMul w1 (8x8) -> h; w2 (16x8) -> Transpose t (8x16) -> MatMul y =
  // h t (4x16, 256 B). Parameters 256 + 512 = 768 B. t is w2 read transposed, no copy: at y,
  // 768 + h 128 + y 256 = 1152 (1664 with t a 512 B copy).
  const std::string model =
      "inputs:\n  - {name: x, shape: [4, 8], dtype: float32}\n"
      "parameters:\n  - {name: w1, shape: [8, 8], dtype: float32}\n  - {name: w2, shape: [16, 8], dtype: float32}\n"
      "ops:\n  - {name: h, type: MatMul, inputs: [x, w1]}\n"
      "  - {name: t, type: Transpose, inputs: [w2, [1, 0]]}\n"
      "  - {name: y, type: MatMul, inputs: [h, t]}\n";
  Compiled one = compileAllRanks("parallel: {device_num: 1}\n" + model);
  REQUIRE_MESSAGE(one.errors.empty(), one.errors);
  MemoryEstimate m = estimateMemory(one.global, settings(false));
  CHECK(m.inference.peakBytes == 1152);
  CHECK(m.inference.peakAt == "y");
  // Data parallel over 2 in training: w2 reaches t through its _MirrorOperator, and t is still a
  // view of it. Saved: x's slice (64 B, for w1's gradient), h's (64 B, for t's) and the loss's
  // log-softmax of y's slice (128 B): 256 B; y keeps nothing of t, which is w2 (768 B with it).
  std::string dataParallel = model;
  dataParallel.replace(dataParallel.find("inputs: [x, w1]}"), 16, "inputs: [x, w1], in_strategy: [[2, 1], [1, 1]]}");
  Compiled two = compileAllRanks("parallel: {device_num: 2, training: true}\n" + dataParallel);
  REQUIRE_MESSAGE(two.errors.empty(), two.errors);
  int mirrors = 0;
  for (const Op& op : two.global.ops) mirrors += op.role == InsertedRole::Mirror;
  CHECK(mirrors == 2);
  CHECK(estimateMemory(two.global, settings(true, Optimizer::Sgd)).training->savedActivationBytes == 256);
}

TEST_CASE("memory: a Reshape is a view of its operand; a Transpose is a copy") {
  const std::string yaml =
      "parallel: {device_num: 1}\n"
      "inputs:\n  - {name: x, shape: [4, 8], dtype: float32}\n"
      "ops:\n  - {name: v, type: Reshape, inputs: [x, [8, 4]]}\n"
      "  - {name: t, type: Transpose, inputs: [v, [1, 0]]}\n"
      "  - {name: r, type: ReLU, inputs: [t]}\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  // x (128 B) and its view v (nothing of its own); t copies it (128), while x is live: 256 at
  // t (a copying Reshape would make it 384). x is freed after t; r (128) with t: 256 again.
  MemoryEstimate m = estimateMemory(c.global, settings(false, Optimizer::AdamW));
  CHECK(m.inference.peakBytes == 256);
  CHECK(m.inference.peakAt == "t");
}

TEST_CASE("memory: the report's memory section, the summary line, and the budget warning exactly when over") {
  TempDir dir;
  writeFile(dir.path() + "/ffn.yaml", ffnModel("  training: true\n  optimizer: adamw\n"));
  RunResult r = runIrc({"ffn.yaml", "--report", "r.json"}, dir.path());
  REQUIRE(r.exitCode == 0);
  // A YAML model trains as MindSpore does: the FFN's 61952 B from the second step on, 45312 B
  // in the first (the persistent-buffer test above).
  CHECK(r.err.find("irc: per rank: peak 24.1 KiB inference, 60.5 KiB training step (adamw; the first step 44.2 KiB)\n") !=
        std::string::npos);
  std::string report = readFile(dir.path() + "/r.json");
  CHECK(report.find("\"memory\":{\"inference\":{\"peak_bytes\":24704.0,\"peak_at\":\"matmul2.forward_op.0\"") !=
        std::string::npos);
  // 61952 B: a budget of 61952 is met, one byte less is not, though the first step fits.
  RunResult fits = runIrc({"ffn.yaml", "--memory-budget", "61952", "-q"}, dir.path());
  CHECK(fits.err.empty());
  RunResult over = runIrc({"ffn.yaml", "--memory-budget", "61951B", "-q"}, dir.path());
  CHECK(over.exitCode == 0);
  // The peak's terms add up to it: 61952 B = 8320 of parameters, 8320 of gradients (a persistent
  // buffer), 16640 of moments, and 28672 live in the backward.
  CHECK(over.err ==
        "irc: warning: rank 0 needs 60.5 KiB at its peak (the training step's backward, from the second step on; the first "
        "step peaks at 44.2 KiB), over the memory budget of 60.5 KiB; biggest: live at the peak 28.0 KiB, optimizer states "
        "16.2 KiB, parameters 8.12 KiB\n");
  CHECK(runIrc({"ffn.yaml", "--memory-budget", "lots"}, dir.path()).exitCode == 2);
  // With a cluster a plan over the device's memory says so without a budget: AdamW on a 65536 x
  // 81920 float32 weight holds 20 GiB of weight, 20 of gradient and 40 of moments on an 80 GiB A100.
  writeFile(dir.path() + "/big.yaml",
            "parallel: {device_num: 1, training: true, optimizer: adamw}\ncluster: {preset: dgx-a100-80gb}\n"
            "inputs: [{name: x, shape: [1024, 65536], dtype: float32}]\n"
            "parameters: [{name: w, shape: [65536, 81920], dtype: float32}]\n"
            "ops:\n  - {name: mm, type: MatMul, inputs: [x, w]}\noutputs: [mm]\n");
  RunResult device = runIrc({"big.yaml", "-q"}, dir.path());
  CHECK(device.exitCode == 0);
  CHECK(device.err ==
        "irc: warning: rank 0 needs 81.5 GiB at its peak (the training step's loss, from the second step on; the first step "
        "peaks at 80.3 GiB), over the 80.0 GiB a dgx-a100-80gb device holds; biggest: optimizer states 40.0 GiB, parameters "
        "20.0 GiB, gradients 20.0 GiB\n");
  CHECK(runIrc({"big.yaml", "-q", "--cluster", "h200-sxm"}, dir.path()).err.empty());  // 140 GiB
  std::string error;
  CHECK(parseByteSize("16GiB", error) == 16.0 * 1073741824);
  // GB of memory is JEDEC's (and MindSpore's max_device_memory's) 2^30: an "80 GB" A100 holds 80 GiB.
  CHECK(parseByteSize("80 GB", error) == 80.0 * 1073741824);
  CHECK(parseByteSize("512MB", error) == 512.0 * 1048576);
  CHECK(parseByteSize("1.5e9", error) == 1.5e9);
  CHECK(!parseByteSize("16GiBs", error));
  CHECK(error.find("valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB") != std::string::npos);
  // A budget of nothing was read as no budget: 0, 0GB and 0.4B (less than a byte) are errors;
  // bytes are whole.
  for (const char* nothing : {"0", "0GB", "0.4B", "0e9"}) {
    CAPTURE(nothing);
    CHECK(!parseByteSize(nothing, error));
    CHECK(error.find("less than one byte") != std::string::npos);
  }
  CHECK(parseByteSize("0.1KiB", error) == 102);
  CHECK(runIrc({"ffn.yaml", "--memory-budget", "0"}, dir.path()).exitCode == 2);
  writeFile(dir.path() + "/zero.yaml", ffnModel("  memory_budget: 0GB\n"));
  RunResult zero = runIrc({"zero.yaml"}, dir.path());
  CHECK(zero.exitCode == 1);
  CHECK(zero.err.find("zero.yaml:7:18: error: memory_budget: '0GB' is less than one byte") == 0);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc memory: the table, the budget's verdict, and an SVG with one line per program and its peak marked") {
  TempDir dir;
  std::string model = std::string(IRC_SOURCE_DIR) + "/examples/ffn.yaml";
  RunResult r = runIrc({"memory", model, "--optimizer", "sgd", "--memory-budget", "24KiB", "--plot", dir.path() + "/m.svg"});
  REQUIRE(r.exitCode == 0);
  CHECK(r.out.find("irc memory: ffn, rank 0 of 8 (every rank holds the same shapes)\n") == 0);
  CHECK(r.out.find("  peak                               24704  24.1 KiB    at matmul2.forward_op.0\n") != std::string::npos);
  CHECK(r.out.find("  training step (sgd)                bytes\n") != std::string::npos);
  CHECK(r.out.find("    optimizer states *                   0  0 B\n") != std::string::npos);
  CHECK(r.out.find("    gradients *                       8320  8.12 KiB    a persistent buffer\n") != std::string::npos);
  CHECK(r.out.find("  resident                           16640  16.2 KiB    what each step starts with") != std::string::npos);
  // SGD with the FFN's persistent gradients (the test above): 45312 B in both steps, over 24 KiB
  // (24576 B) by 20736 B.
  CHECK(r.out.find("  peak                               45312  44.2 KiB    from the second step on: in the backward, at "
                   "matmul2.forward_op.0\n") != std::string::npos);
  CHECK(r.out.find("  budget 24.0 KiB: OVER by 20.2 KiB\n") != std::string::npos);
  std::string svg = readFile(dir.path() + "/m.svg");
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  size_t lines = 0, peaks = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos; at = svg.find("<polyline", at + 1)) ++lines;
  for (size_t at = svg.find("<circle class=\"peak\""); at != std::string::npos; at = svg.find("<circle class=\"peak\"", at + 1))
    ++peaks;
  CHECK(lines == 3);  // inference, the training step from the second step on, its first step
  CHECK(peaks == 3);
  CHECK(svg.find(">peak 24.1 KiB at matmul2.forward_op.0</text>") != std::string::npos);
  CHECK(svg.find(">peak 44.2 KiB in the backward at matmul2.forward_op.0 (from the second step on)</text>") != std::string::npos);
  CHECK(svg.find(">first step: 44.2 KiB in the backward at matmul2.forward_op.0</text>") != std::string::npos);
  CHECK(svg.find(">resident 16.2 KiB</text>") != std::string::npos);
  // The inference line has a point per op of the rank's program (11: five model ops, the
  // AllReduce, the StridedSlice, and a training graph's four mirrors of the weights).
  size_t first = svg.find("points=\"") + 8;
  std::string points = svg.substr(first, svg.find('"', first) - first);
  CHECK(std::count(points.begin(), points.end(), ',') == 11);
  CHECK(runIrc({"memory", model, "--optimizer", "lion"}).exitCode == 2);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("memory: recompute keeps only a checkpoint's inputs; its ops' own saved values come back before their backward") {
  // x (4x8 float32, 128 B) -> MatMul w1 -> h -> GeLU -> a -> Log -> b -> MatMul w2 -> y; each
  // activation 128 B. Without recompute the step keeps x, h (GeLU's input), a (Log's input), b
  // (MatMul2's input) and the loss's log-softmax of y: 640 B.
  const std::string base =
      "parallel: {device_num: 1, training: true}\n"
      "inputs:\n  - {name: x, shape: [4, 8], dtype: float32}\n"
      "parameters:\n  - {name: w1, shape: [8, 8], dtype: float32}\n  - {name: w2, shape: [8, 8], dtype: float32}\n"
      "ops:\n  - {name: h, type: MatMul, inputs: [x, w1]}\n"
      "  - {name: a, type: GeLU, inputs: [h]RECOMPUTE}\n"
      "  - {name: b, type: Log, inputs: [a]RECOMPUTE}\n"
      "  - {name: y, type: MatMul, inputs: [b, w2]}\n";
  auto model = [&](const std::string& flag) {
    std::string text = base;
    for (size_t at = text.find("RECOMPUTE"); at != std::string::npos; at = text.find("RECOMPUTE")) text.replace(at, 9, flag);
    return text;
  };
  Compiled plain = compileAllRanks(model(""));
  REQUIRE_MESSAGE(plain.errors.empty(), plain.errors);
  TrainingMemory kept = *estimateMemory(plain.global, settings(true, Optimizer::Sgd)).training;
  CHECK(kept.savedActivationBytes == 640);
  CHECK(kept.recomputedOps == 0);
  // Recomputing GeLU and Log: h is the checkpoint's input (kept), a is theirs alone (dropped,
  // made again before Log's backward), b is MatMul2's (kept): 640 - 128.
  Compiled again = compileAllRanks(model(", recompute: true"));
  REQUIRE_MESSAGE(again.errors.empty(), again.errors);
  TrainingMemory r = *estimateMemory(again.global, settings(true, Optimizer::Sgd)).training;
  CHECK(r.savedActivationBytes == 512);
  CHECK(r.recomputedActivationBytes == 128);
  CHECK(r.recomputedOps == 2);
  CHECK(r.peakBytes <= kept.peakBytes);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE(
    "memory: optimizer parallel shards each replicated weight over its replicas, gathers it before use, reduce-scatters its "
    "gradient") {
  // The FFN in training on 8 devices: every parameter is read replicated over the 2-way axis
  // the strategies leave free. With enable_parallel_optimizer each is held split on dim 0 over
  // it: 8320 B of parameters become 4160 per rank, AdamW's states 16640 become 8320, an
  // AllGather brings each weight back before its use, and each mirror's gradient is
  // reduce-scattered: (n - 1) / n of the gathered slice, 4096 / 2 + 64 / 2 + 4096 / 2 + 64 / 2 =
  // 4160 B per rank (an AllReduce would send twice that).
  std::string base = ffnModel("  training: true\n  enable_parallel_optimizer: true\n  parallel_optimizer_threshold: 0\n");
  Compiled c = compileAllRanks(base);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  int gathers = 0, sharded = 0;
  for (const Op& op : c.global.ops) {
    gathers += op.type == "AllGather" && op.role == InsertedRole::Redistribution;
    sharded += op.role == InsertedRole::Mirror && op.step->shardedGradient;
  }
  CHECK(gathers == 4);
  CHECK(sharded == 4);
  CHECK(compileTotals(c.global).gradBytesPerRank == 4160);
  CHECK(verifyCompiled(c).ok);
  // Level 1 keeps the gradients whole (8320) until the step; level 2 reduce-scatters them as they
  // are made (4160); level 3 also gathers the weights again for backward instead of keeping the
  // gathered copy. Only matmul2 keeps its gathered weight (4096 B): its other operand takes a
  // gradient, where matmul's is the graph input x, which takes none, so matmul's weight is read
  // by no backward (as torch keeps nothing of a weight times an input): saved activations
  // 16384 -> 12288.
  auto at = [&](int level) { return *estimateMemory(c.global, settings(true, Optimizer::AdamW, level)).training; };
  for (int level : {1, 2, 3}) {
    CHECK(at(level).parameterBytes == 4160);
    CHECK(at(level).optimizerStateBytes == 8320);
  }
  CHECK(at(1).gradientBytes == 8320);
  CHECK(at(2).gradientBytes == 4160);
  CHECK(at(2).savedActivationBytes == 16384);
  CHECK(at(3).savedActivationBytes == 12288);
  CHECK(at(3).peakBytes < at(2).peakBytes);
  // Under the threshold (the default 64 KiB) nothing is sharded.
  Compiled small = compileAllRanks(ffnModel("  training: true\n  enable_parallel_optimizer: true\n"));
  REQUIRE_MESSAGE(small.errors.empty(), small.errors);
  CHECK(compileTotals(small.global).paramBytesPerRank == 8320);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("training conventions follow the model's source: torch's for an ONNX graph and its plans, MindSpore's for YAML") {
  TempDir dir;
  std::string onnx = std::string(IRC_SOURCE_DIR) + "/examples/gpt2.onnx";
  auto memoryOf = [&](const std::vector<std::string>& args) {
    RunResult r = runIrc(args, dir.path());
    REQUIRE_MESSAGE(r.exitCode == 0, r.err);
    return nlohmann::json::parse(readFile(dir.path() + "/r.json"))["memory"]["training"];
  };
  // An ONNX graph alone: gradients freed between steps, AdamW a loop over the parameters.
  writeFile(dir.path() + "/plan.yaml",
            "graph: " + onnx +
                "\ndims: {batch: 4, sequence: 8}\nparallel: {device_num: 2, training: true, search_mode: data_parallel}\n");
  auto torch = memoryOf({"plan.yaml", "--report", "r.json", "-q"});
  CHECK(torch["gradient_buffer"] == "freed");
  CHECK(torch["optimizer_kernels"] == "for_loop");
  CHECK(torch["gradients_resident"] == false);
  CHECK(torch["optimizer_temporaries_bytes"].get<double>() > 0);
  // The plan may say otherwise: the gradients are then resident from the step's start.
  writeFile(dir.path() + "/kept.yaml",
            "graph: " + onnx +
                "\ndims: {batch: 4, sequence: 8}\nparallel: {device_num: 2, training: true, search_mode: data_parallel, "
                "gradient_buffer: persistent, optimizer_kernels: fused}\n");
  auto kept = memoryOf({"kept.yaml", "--report", "r.json", "-q"});
  CHECK(kept["gradients_resident"] == true);
  CHECK(kept["optimizer_temporaries_bytes"] == 0.0);
  CHECK(kept["resident_bytes"].get<double>() == torch["resident_bytes"].get<double>() + torch["gradients_bytes"].get<double>());
  CHECK(kept["peak_bytes"].get<double>() > torch["peak_bytes"].get<double>());
  // irc import keeps torch's conventions in the YAML it writes, and the model trains by them.
  RunResult imported = runIrc({"import", onnx, "--dim", "batch=4", "--dim", "sequence=8", "-o", "g.yaml"}, dir.path());
  REQUIRE_MESSAGE(imported.exitCode == 0, imported.err);
  std::string yaml = readFile(dir.path() + "/g.yaml");
  CHECK(yaml.find("gradient_buffer: freed, optimizer_kernels: for_loop}") != std::string::npos);
  yaml.replace(yaml.find("device_num: 1,"), 14, "device_num: 2, training: true,");
  writeFile(dir.path() + "/g.yaml", yaml);
  auto back = memoryOf({"g.yaml", "--report", "r.json", "-q"});
  CHECK(back["gradient_buffer"] == "freed");
  CHECK(back["optimizer_kernels"] == "for_loop");
  CHECK(back["gradients_resident"] == false);
}

}  // namespace irc::test
