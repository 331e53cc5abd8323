// Pipeline parallelism (cost/stage_estimate.h): stages by glob and `auto`, Send/Receive pairs
// in the ranks' programs, verify across stages, the bubble, and 1F1B memory derived by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "dumps/ir_printer.h"
#include "dumps/report.h"
#include "cost/step_schedule.h"
#include "cost/stage_estimate.h"
#include "tests/approx.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"
#include "tools/bench/transformer_model.h"

namespace irc::test {
namespace {

// The 4-layer GPT of the issue: 8 devices, 2 stages of 2-way data x 2-way tensor parallel.
std::string pipelinedGpt(const std::string& stages, const std::string& extra = "") {
  std::string yaml = bench::transformerModel(4, 2, 2);
  size_t at = yaml.find("parallel: {device_num: 4}");
  REQUIRE(at != std::string::npos);
  yaml.replace(at, 25, "parallel: {device_num: 8, pipeline_stages: 2, micro_batches: 4" + extra + "}");
  return yaml + "stages: " + stages + "\n";
}

// The sr_tags of a rank's ops of `type` ("Send" or "Receive").
std::vector<std::string> tagsOf(const std::string& dump, const std::string& type) {
  std::vector<std::string> tags;
  std::regex line("= " + type + "\\(.*sr_tag: ([0-9]+)");
  for (std::sregex_iterator it(dump.begin(), dump.end(), line), end; it != end; ++it) tags.push_back((*it)[1]);
  return tags;
}

int32_t stageOf(const Graph& g, const std::string& op) { return g.op(g.value(*g.findValue(op)).producer).stage; }

}  // namespace

TEST_CASE(
    "acceptance: a 4-layer GPT on 2 stages of 2 x 2: rank 0 sends, rank 4 receives with the same tags, verify, bubble 0.2") {
  Compiled c = compileAllRanks(pipelinedGpt(R"({"l0.*": 0, "l1.*": 0, "l2.*": 1, "l3.*": 1})"));
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  REQUIRE(c.locals.size() == 8);
  std::string rank0 = printGraph(c.locals.at(0), PrintOptions{}), rank4 = printGraph(c.locals.at(4), PrintOptions{});
  std::vector<std::string> sent = tagsOf(rank0, "Send"), received = tagsOf(rank4, "Receive");
  CHECK(!sent.empty());
  CHECK(sent == received);
  CHECK(tagsOf(rank0, "Receive").empty());
  CHECK(tagsOf(rank4, "Send").empty());
  // Each rank runs its stage only, and its groups are its stage's ranks.
  CHECK(rank0.find("(l2.ln1)") == std::string::npos);
  CHECK(rank4.find("(l0.ln1)") == std::string::npos);
  CHECK(rank4.find("group_ranks: 4-5") != std::string::npos);
  CHECK(rank0.find("dest_rank: 1") != std::string::npos);
  CHECK(rank4.find("src_rank: 0") != std::string::npos);
  CHECK(rank4.find("group_ranks: 0-4, shape: (64, 64)") != std::string::npos);  // the pipeline group of position 0
  VerifyResult r = verifyCompiled(c);
  CHECK(r.problem.empty());
  CHECK(r.ok);
  nlohmann::ordered_json report = buildReport(c.global, c.options, 0);
  CHECK(report["pipeline"]["bubble_fraction"].get<double>() == relative(0.2));
  CHECK(report["pipeline"]["stage_list"][1]["ranks"] == nlohmann::ordered_json::array({4, 7}));
  CHECK(report["device_num"] == 8);
  for (const auto& op : report["ops"])
    CHECK(op["stage"] ==
          (op["name"].get<std::string>().rfind("l0.", 0) == 0 || op["name"].get<std::string>().rfind("l1.", 0) == 0 ? 0 : 1));
}

TEST_CASE("stages: auto balances the stages' estimated times, and moves the split to a heavy layer") {
  Compiled c = compileAllRanks(pipelinedGpt("auto"));
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  std::vector<double> seconds = stageSeconds(c.global, c.options);
  REQUIRE(seconds.size() == 2);
  CHECK(std::max(seconds[0], seconds[1]) <= 1.25 * std::min(seconds[0], seconds[1]));
  CHECK(verifyCompiled(c).ok);

  // Four layers of one MatMul each, but layer 0 does three: alone it is as slow as the rest.
  auto chain = [](int heavy) {
    std::string params, ops, x = "x";
    for (int l = 0; l < 4; ++l)
      for (int k = 0; k < (l == 0 ? heavy : 1); ++k) {
        params += fmt::format("  - {{name: w{}_{}, shape: [256, 256], dtype: float32}}\n", l, k);
        ops += fmt::format("  - {{name: l{}.m{}, type: MatMul, inputs: [{}, w{}_{}]}}\n", l, k, x, l, k);
        x = fmt::format("l{}.m{}", l, k);
      }
    return fmt::format(
        "parallel: {{device_num: 2, pipeline_stages: 2, micro_batches: 4}}\ninputs:\n"
        "  - {{name: x, shape: [256, 256], dtype: float32}}\nparameters:\n{}ops:\n{}outputs: [{}]\nstages: auto\n",
        params, ops, x);
  };
  Compiled even = compileAllRanks(chain(1));
  REQUIRE_MESSAGE(even.errors.empty(), even.errors);
  CHECK(stageOf(even.global, "l1.m0") == 0);
  CHECK(stageOf(even.global, "l2.m0") == 1);
  Compiled heavy = compileAllRanks(chain(3));
  REQUIRE_MESSAGE(heavy.errors.empty(), heavy.errors);
  CHECK(stageOf(heavy.global, "l0.m2") == 0);
  CHECK(stageOf(heavy.global, "l1.m0") == 1);
  CHECK(verifyCompiled(heavy).ok);
}

TEST_CASE("1F1B memory, derived by hand: stage 0 holds two micro-batches' saved activations, stage 1 one") {
  // Stage 0 (rank 0): a = MatMul(x, w0), then Send(a); stage 1 (rank 1): Receive, b = MatMul(.., w1).
  // All float32 [8, 8] = 256 B. MatMul keeps its input for backward (x on stage 0, the received a
  // on stage 1); the weights are parameters. Four micro-batches accumulate into each stage's
  // weight gradient (256 B, a YAML model's persistent buffer besides): it is there from the
  // step's start. AdamW's states: 64 elements x 2 x 4 B = 512, from the second step on.
  //  stage 0: forward peak at the Send: w0 + x + a + the sent copy = 1024. No loss here: the sent
  //   value's gradient arrives (+256 = 1024). Backward of the Send: a's gradient (+256 = 1280);
  //   of a: w0's gradient, already in the buffer, with a's gradient dropped after: 1024. 1F1B:
  //   min(2 - 0, 4) = 2 micro-batches in flight, one more x (256), and the gradient: 1280 + 256
  //   + 256 = 1792 in the first step, in backward at the Send; 1792 + 512 = 2304 after. The
  //   update: w0, its gradient, the sent copy and the states, 1280.
  //  stage 1: forward w1 + received + b = 768; the loss keeps b's log-softmax and makes two
  //   gradients: 768 + 3 x 256 = 1536; saved = received + log-softmax = 512. One micro-batch in
  //   flight (min(2 - 1, 4)): 1536 + 256 (the gradient) = 1792 at the loss, 2304 after.
  std::string yaml =
      "parallel: {device_num: 2, pipeline_stages: 2, micro_batches: 4, training: true}\n"
      "inputs:\n  - {name: x, shape: [8, 8], dtype: float32}\n"
      "parameters:\n  - {name: w0, shape: [8, 8], dtype: float32}\n  - {name: w1, shape: [8, 8], dtype: float32}\n"
      "ops:\n  - {name: a, type: MatMul, inputs: [x, w0]}\n  - {name: b, type: MatMul, inputs: [a, w1]}\n"
      "outputs: [b]\nstages: {a: 0, b: 1}\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  MemoryEstimate s0 = estimateStageMemory(c.global, c.options, 0), s1 = estimateStageMemory(c.global, c.options, 1);
  REQUIRE(s0.training);
  REQUIRE(s1.training);
  CHECK(s0.training->inFlightMicroBatches == 2);
  CHECK(s1.training->inFlightMicroBatches == 1);
  CHECK(s0.training->savedActivationBytes == 256);
  CHECK(s1.training->savedActivationBytes == 512);
  CHECK(s0.training->gradientsResident);
  CHECK(s0.training->firstStepPeakBytes == 1792);
  CHECK(s0.training->peakBytes == 2304);
  CHECK(s0.training->peakPhase == "backward");
  CHECK(s0.training->stepLiveBytes == 1280);
  CHECK(s1.training->firstStepPeakBytes == 1792);
  CHECK(s1.training->peakBytes == 2304);
  CHECK(s1.training->peakPhase == "loss");
  CHECK(verifyCompiled(c).ok);
}

TEST_CASE("the summary's parameters per rank are the rank's: its stage's, in the precision it holds them") {
  // The 1F1B model above in bf16_mixed: rank 0 holds w0 alone, [8, 8] in 16 bits = 128 B. The
  // line said every stage's slices at float32, 512 B (176 GB a GPU for GPT-3 on 1,536 GPUs, where
  // the memory estimate held 15.76 GB).
  TempDir dir;
  writeFile(dir.path() + "/m.yaml",
            "parallel: {device_num: 2, pipeline_stages: 2, micro_batches: 4, training: true, precision: bf16_mixed}\n"
            "inputs:\n  - {name: x, shape: [8, 8], dtype: float32}\n"
            "parameters:\n  - {name: w0, shape: [8, 8], dtype: float32}\n  - {name: w1, shape: [8, 8], dtype: float32}\n"
            "ops:\n  - {name: a, type: MatMul, inputs: [x, w0]}\n  - {name: b, type: MatMul, inputs: [a, w1]}\n"
            "outputs: [b]\nstages: {a: 0, b: 1}\n");
  RunResult r = runIrc({"m.yaml", "--dump-dir", "m_ir"}, dir.path());
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK(r.err.find(", 128 bytes of parameters\n") != std::string::npos);
}

TEST_CASE("pipeline errors: a value flowing back, a stage out of range, no stages, an empty stage, an uneven device_num") {
  std::string head =
      "parallel: {device_num: 4, pipeline_stages: 2}\ninputs:\n  - {name: x, shape: [8, 8], dtype: float32}\n"
      "ops:\n  - {name: a, type: ReLU, inputs: [x]}\n  - {name: b, type: Neg, inputs: [a]}\noutputs: [b]\n";
  CHECK(compileAllRanks(head + "stages: {a: 1, b: 0}\n").errors.find("op 'b' is in pipeline stage 0 but reads 'a' of stage 1") !=
        std::string::npos);
  CHECK(compileAllRanks(head + "stages: {a: 0, b: 2}\n").errors.find("stage 2 of 'b' is not a stage of 2 (valid: 0 .. 1)") !=
        std::string::npos);
  CHECK(compileAllRanks(head).errors.find("pipeline_stages 2 needs `stages:`") != std::string::npos);
  CHECK(compileAllRanks(head + "stages: {a: 0}\n").errors.find("pipeline stage 1 has no op") != std::string::npos);
  CHECK(compileAllRanks(head + "stages: {zz: 0}\n").errors.find("stages key 'zz' matches no op") != std::string::npos);
  std::string uneven = head;
  uneven.replace(uneven.find("device_num: 4"), 13, "device_num: 3");
  CHECK(compileAllRanks(uneven + "stages: {a: 0, b: 1}\n").errors.find("device_num 3 is not a multiple of pipeline_stages 2") !=
        std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc diff names a moved stage boundary as one change; explain names an op's stage") {
  TempDir tmp;
  std::string a = pipelinedGpt(R"({"l0.*": 0, "l1.*": 0, "l2.*": 1, "l3.*": 1})");
  std::string b = pipelinedGpt(R"({"l0.*": 0, "l1.*": 1, "l2.*": 1, "l3.*": 1})");
  writeFile(tmp.path() + "/a.yaml", a);
  writeFile(tmp.path() + "/b.yaml", b);
  RunResult r = runIrc({"diff", tmp.path() + "/a.yaml", tmp.path() + "/b.yaml", "--stat"});
  CHECK(r.exitCode == 1);
  CHECK(r.out.find(
            "  strategies changed: 0\n  pipeline stage boundary moved: sends [l1.out -> stage 1] -> [l0.out -> stage 1]\n") !=
        std::string::npos);
  RunResult e = runIrc({"explain", tmp.path() + "/a.yaml", "l2.q"});
  CHECK(e.out.find("  pipeline stage: 1 (ranks 4 .. 7)\n") != std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("irc memory --all-ranks: a line a rank, each pipeline stage's own peaks") {
  TempDir tmp;
  writeFile(tmp.path() + "/p.yaml", pipelinedGpt(R"({"l0.*": 0, "l1.*": 0, "l2.*": 1, "l3.*": 1})", ", training: true"));
  RunResult r = runIrc({"memory", tmp.path() + "/p.yaml", "--all-ranks"});
  REQUIRE(r.exitCode == 0);
  CHECK(r.out.find("every rank of 8\n") != std::string::npos);
  std::regex row(R"( +([0-9]) +([01]) +([0-9.]+ [KMG]?i?B) +([0-9.]+ [KMG]?i?B)\n)");
  std::map<int, std::string> training;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), row), end; it != end; ++it)
    training[std::stoi((*it)[1])] = (*it)[2].str() + " " + (*it)[4].str();
  REQUIRE(training.size() == 8);
  CHECK(training[0] == training[3]);
  CHECK(training[4] == training[7]);
  CHECK(training[0] != training[4]);  // stage 0 holds two micro-batches' activations, stage 1 one
  CHECK(training[0].rfind("0 ", 0) == 0);
  CHECK(training[4].rfind("1 ", 0) == 0);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("the step schedule, derived by hand: 1F1B's bubble, the update at HBM bandwidth, the terms adding up") {
  // Two stages of one rank each, four micro-batches, training, AdamW in float32 on a cluster whose
  // figures are written here: stage 0 a = MatMul(x, w0), stage 1 b = MatMul(a, w1), each weight
  // [256, 256]. 1F1B runs M + P - 1 slots of the slowest stage's micro-batch: the bubble is
  // (P - 1) x one micro-batch = (P - 1) / M of the M micro-batches' compute and communication
  // (Narayanan et al. 2021), whatever the kernels take. The update streams each element's
  // gradient (4 B), weight (read and write, 8 B) and two moments (read and write, 16 B): 28 B an
  // element, 65,536 elements a stage, at 2.0e12 B/s x 0.5 memory efficiency: 1.835008e-6 s.
  auto model = [](int64_t micro) {
    return fmt::format(
        "parallel: {{device_num: 2, pipeline_stages: 2, micro_batches: {}, training: true, optimizer: adamw}}\n"
        "cluster: {{devices_per_node: 2, peak_flops: {{fp32: 20e12}}, hbm_bandwidth: 2.0e12, memory_efficiency: 0.5, "
        "intra_node_bandwidth: 3e11, nics_per_node: 1, nic_gbps: 200}}\n"
        "inputs:\n  - {{name: x, shape: [512, 256], dtype: float32}}\n"
        "parameters:\n  - {{name: w0, shape: [256, 256], dtype: float32}}\n  - {{name: w1, shape: [256, 256], dtype: float32}}\n"
        "ops:\n  - {{name: a, type: MatMul, inputs: [x, w0]}}\n  - {{name: b, type: MatMul, inputs: [a, w1]}}\n"
        "outputs: [b]\nstages: {{a: 0, b: 1}}\n",
        micro);
  };
  for (int64_t micro : {4, 8}) {
    CAPTURE(micro);
    Compiled c = compileAllRanks(model(micro));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    auto e = estimateClusterStep(c.global, c.options);
    REQUIRE(e);
    const double m = static_cast<double>(micro);
    // One rank a stage: no gradient reduction, so nothing of it is exposed.
    CHECK(e->gradientSync == 0);
    CHECK(e->pipelineBubble > 0);
    CHECK(e->pipelineBubble == relative((e->compute + e->exposedCommunication) / m).epsilon(1e-12));
    CHECK(e->optimizer == relative(65536.0 * 28 / (2.0e12 * 0.5)).epsilon(1e-12));
    CHECK(e->total == relative(e->compute + e->exposedCommunication + e->pipelineBubble + e->optimizer).epsilon(1e-12));
    // The Send/Receive between the stages: each micro-batch's activation a ([512, 256] float32,
    // 512 KiB) forward and its gradient back, on the critical path.
    CHECK(e->exposedCommunication > 0);
  }
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("virtual stages, derived by hand: the interleaved schedule's transfers, bubble and chunks in flight") {
  // The 4-layer GPT over 2 stages with 2 virtual stages each: l0 and l2 on stage 0 (chunks 0 and
  // 1), l1 and l3 on stage 1. The activations cross 0 -> 1, 1 -> 0 (back to the first stage for
  // its second chunk) and 0 -> 1 again: three Send/Receive pairs where 1F1B had one.
  Compiled c = compileAllRanks(pipelinedGpt(R"({"l0.*": 0, "l1.*": 1, "l2.*": 2, "l3.*": 3})", ", virtual_stages: 2"));
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  REQUIRE(c.global.transfers.size() == 3);
  CHECK(c.global.transfers[1].fromStage == 1);
  CHECK(c.global.transfers[1].toStage == 0);
  CHECK(stageOf(c.global, "l2.out") == 0);
  CHECK(c.global.op(c.global.value(*c.global.findValue("l2.out")).producer).chunk == 1);
  CHECK(verifyCompiled(c).ok);
  // Megatron's interleaved 1F1B: rank s warms up with (P - s - 1) * 2 + (v - 1) * P chunk
  // micro-batches and holds one more: stage 0 (1 * 2 + 1 * 2 + 1) = 5 chunks = 2.5 stage
  // micro-batches (P + (P - 1) / v), stage 1 (0 + 2 + 1) = 3 = 1.5; 1F1B held 2 and 1.
  CHECK(inFlightMicroBatches(0, c.options) == 2.5);
  CHECK(inFlightMicroBatches(1, c.options) == 1.5);
  ParallelSettings plain = c.options;
  plain.virtualStages = 1;
  CHECK(inFlightMicroBatches(0, plain) == 2);
  CHECK(inFlightMicroBatches(1, plain) == 1);
  // The bubble: (P - 1) / v = 0.5 slots of a stage's micro-batch against M = 4: 0.5 / 4.5.
  CHECK(bubbleFraction(c.options) == relative(1.0 / 9).epsilon(1e-15));
  CHECK(bubbleFraction(plain) == relative(1.0 / 5).epsilon(1e-15));
  // A virtual stage may be empty (the generator's 126 layers over 128 virtual stages): with
  // three a stage, l0 on stage 0 and l1, l2, l3 on stage 1's chunks 0, 1, 2, one value crosses
  // (l0 -> l1); l1 -> l2 -> l3 stay on stage 1's ranks.
  Compiled sparse = compileAllRanks(pipelinedGpt(R"({"l0.*": 0, "l1.*": 1, "l2.*": 3, "l3.*": 5})", ", virtual_stages: 3"));
  REQUIRE_MESSAGE(sparse.errors.empty(), sparse.errors);
  CHECK(sparse.global.transfers.size() == 1);
  CHECK(sparse.global.op(sparse.global.value(*sparse.global.findValue("l3.out")).producer).chunk == 2);
  CHECK(verifyCompiled(sparse).ok);
  CHECK(compileAllRanks(pipelinedGpt(R"({"l0.*": 1, "l1.*": 3, "l2.*": 3, "l3.*": 5})", ", virtual_stages: 3"))
            .errors.find("pipeline stage 0 has no op") != std::string::npos);
}

TEST_CASE("virtual stages on a cluster: the bubble is a v-th of 1F1B's; micro-batches must be a multiple of the stages") {
  auto model = [](int64_t v, int64_t micro, const char* link = "3e11") {
    return fmt::format(
        "parallel: {{device_num: 2, pipeline_stages: 2, micro_batches: {}, virtual_stages: {}, training: true}}\n"
        "cluster: {{devices_per_node: 2, peak_flops: {{fp32: 20e12}}, hbm_bandwidth: 2.0e12, intra_node_bandwidth: {}, "
        "nics_per_node: 1, nic_gbps: 200}}\n"
        "inputs:\n  - {{name: x, shape: [512, 256], dtype: float32}}\n"
        "parameters:\n  - {{name: w0, shape: [256, 256], dtype: float32}}\n  - {{name: w1, shape: [256, 256], dtype: float32}}\n"
        "  - {{name: w2, shape: [256, 256], dtype: float32}}\n  - {{name: w3, shape: [256, 256], dtype: float32}}\n"
        "ops:\n  - {{name: a, type: MatMul, inputs: [x, w0]}}\n  - {{name: b, type: MatMul, inputs: [a, w1]}}\n"
        "  - {{name: c, type: MatMul, inputs: [b, w2]}}\n  - {{name: d, type: MatMul, inputs: [c, w3]}}\n"
        "outputs: [d]\nstages: {{{}}}\n",
        micro, v, link, v == 2 ? "a: 0, b: 1, c: 2, d: 3" : "a: 0, b: 0, c: 1, d: 1");
  };
  Compiled plain = compileAllRanks(model(1, 4)), interleaved = compileAllRanks(model(2, 4));
  REQUIRE_MESSAGE(plain.errors.empty(), plain.errors);
  REQUIRE_MESSAGE(interleaved.errors.empty(), interleaved.errors);
  auto a = estimateClusterStep(plain.global, plain.options), b = estimateClusterStep(interleaved.global, interleaved.options);
  REQUIRE(a);
  REQUIRE(b);
  // Each stage computes the same two products either way; the bubble is one slot of the slowest
  // stage's micro-batch (compute and communication, over M) under 1F1B, half a slot interleaved.
  CHECK(a->compute == relative(b->compute).epsilon(1e-12));
  CHECK(a->pipelineBubble == relative((a->compute + a->exposedCommunication) / 4).epsilon(1e-12));
  CHECK(b->pipelineBubble == relative((b->compute + b->exposedCommunication - b->gradientSyncExposed) / 4 / 2).epsilon(1e-12));
  // Interleaving sends three activations a micro-batch where 1F1B sends one.
  CHECK(interleaved.global.transfers.size() == 3);
  CHECK(plain.global.transfers.size() == 1);
  // 1F1B waits for its exchange; interleaved, each chunk's exchange runs behind the next chunk's
  // compute (Megatron-Core's overlap_p2p_comm), which here is longer: nothing is exposed.
  CHECK(a->exposedCommunication > 0);
  CHECK(b->exposedCommunication - b->gradientSyncExposed == 0);
  // On a link so slow that an exchange outlasts a chunk, derived by hand from 1F1B's figures: one
  // product takes x = compute / (3 passes x 2 products x M), an exchange p = exposed / M (each
  // stage sends or returns one a micro-batch). Interleaved, stage 0 sends a->b and c->d behind a
  // one-product forward chunk and returns b->c's gradient behind a two-product backward chunk:
  // 2 (p - x) + (p - 2x); stage 1 sends b->c (p - x) and returns two (2 (p - 2x)): 3p - 5x.
  Compiled slowPlain = compileAllRanks(model(1, 4, "3e6")), slowInterleaved = compileAllRanks(model(2, 4, "3e6"));
  auto c = estimateClusterStep(slowPlain.global, slowPlain.options),
       d = estimateClusterStep(slowInterleaved.global, slowInterleaved.options);
  REQUIRE(c);
  REQUIRE(d);
  const double x = c->compute / (3 * 2 * 4), p = c->exposedCommunication / 4;
  REQUIRE(p > 2 * x);
  CHECK(d->exposedCommunication == relative(4 * (3 * p - 4 * x)).epsilon(1e-12));
  CHECK(compileAllRanks(model(2, 3)).errors.find("virtual_stages 2 needs micro_batches a multiple of pipeline_stages 2") !=
        std::string::npos);
  CHECK(compileAllRanks(model(2, 4).replace(model(2, 4).find("d: 3"), 4, "d: 4"))
            .errors.find("virtual stage 4 of 'd' is not a virtual stage of 4 (valid: 0 .. 3)") != std::string::npos);
  std::string single = model(2, 4);
  single.replace(single.find("pipeline_stages: 2"), 18, "pipeline_stages: 1");
  CHECK(compileAllRanks(single).errors.find("virtual_stages 2 interleaves pipeline stages: it needs pipeline_stages > 1") !=
        std::string::npos);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE(
    "the step schedule with ZeRO: the gradients' ReduceScatter hides behind backward, the weights' AllGather behind forward") {
  // One stage of 2 data-parallel ranks, one micro-batch, a slow network: the gradient reduction
  // (R, an AllReduce's time) outlasts the backward (2F). Without ZeRO, R - 2F is exposed; with
  // ZeRO-1 the reduction is a ReduceScatter (R/2) behind the backward and an AllGather of the
  // updated weights (R/2) behind the next step's forward (F): (R/2 - 2F)+ + (R/2 - F)+.
  auto model = [](int zero) {
    return fmt::format(
        "parallel: {{device_num: 2, training: true, optimizer: adamw, zero_stage: {}}}\n"
        "cluster: {{devices_per_node: 1, peak_flops: {{fp32: 20e12}}, hbm_bandwidth: 2.0e12, intra_node_bandwidth: 3e11, "
        "nics_per_node: 1, nic_gbps: 1}}\n"
        "inputs:\n  - {{name: x, shape: [64, 512], dtype: float32}}\n"
        "parameters:\n  - {{name: w, shape: [512, 512], dtype: float32}}\n"
        "ops:\n  - {{name: y, type: MatMul, inputs: [x, w], in_strategy: [[2, 1], [1, 1]]}}\noutputs: [y]\n",
        zero);
  };
  for (int zero : {0, 1}) {
    CAPTURE(zero);
    Compiled c = compileAllRanks(model(zero));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    auto e = estimateClusterStep(c.global, c.options);
    REQUIRE(e);
    const double R = e->gradientSync, F = e->compute / 3;
    REQUIRE(R > 3 * F);  // the network is slow enough that both forms expose some
    const double want = zero ? std::max(0.0, R / 2 - 2 * F) + std::max(0.0, R / 2 - F) : R - 2 * F;
    CHECK(e->gradientSyncExposed == relative(want).epsilon(1e-12));
  }
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("the step schedule, derived by hand in seconds: 2 stages x DP 2, 4 micro-batches, hidden and exposed reduction") {
  // Stage 0 (ranks 0-1, node 0): a = x w0, a2 = a w2; stage 1 (ranks 2-3, node 1): b = a2 w1.
  // Data parallel 2 in each stage; float32; every figure of the cluster written here, each
  // efficiency 1. A rank's product: [256, 256] x [256, 256] (x is [512, 256], split 2 ways),
  // 2 x 256^3 FLOPs at 1e13 FLOP/s on 4 SMs (4 output tiles of 128 x 128: one full wave), 1 us
  // of launch; its 768 KiB of operands and result at 1e12 B/s take less than the math.
  auto model = [](const char* intraBandwidth) {
    return fmt::format(
        "parallel: {{device_num: 4, pipeline_stages: 2, micro_batches: 4, training: true, optimizer: adamw}}\n"
        "cluster: {{devices_per_node: 2, peak_flops: {{fp32: 1e13}}, compute_units: 4, gemm_efficiency: 1, "
        "hbm_bandwidth: 1e12, memory_efficiency: 1, intra_node_bandwidth: {}, intra_node_efficiency: 1, "
        "intra_node_latency: 2e-6, nics_per_node: 2, nic_gbps: 100, inter_node_efficiency: 1, inter_node_latency: 5e-6, "
        "kernel_launch_seconds: 1e-6}}\n"
        "inputs:\n  - {{name: x, shape: [512, 256], dtype: float32}}\n"
        "parameters:\n  - {{name: w0, shape: [256, 256], dtype: float32}}\n  - {{name: w2, shape: [256, 256], dtype: float32}}\n"
        "  - {{name: w1, shape: [256, 256], dtype: float32}}\n"
        "ops:\n  - {{name: a, type: MatMul, inputs: [x, w0], in_strategy: [[2, 1], [1, 1]]}}\n"
        "  - {{name: a2, type: MatMul, inputs: [a, w2], in_strategy: [[2, 1], [1, 1]]}}\n"
        "  - {{name: b, type: MatMul, inputs: [a2, w1], in_strategy: [[2, 1], [1, 1]]}}\n"
        "outputs: [b]\nstages: {{a: 0, a2: 0, b: 1}}\n",
        intraBandwidth);
  };
  const double F = 2.0 * 256 * 256 * 256 / 1e13 + 1e-6;  // one product's forward on a rank
  // a2's slice, [256, 256] float32 (256 KiB), crosses from node 0 to node 1 over a NIC of
  // 100 Gb/s (2 NICs for 2 devices: one each), plus one hop's latency; forward on stage 0's
  // path, its gradient back on stage 1's.
  const double p2p = 262144 / 12.5e9 + 5e-6;
  const double stage0 = 3 * 2 * F + p2p, stage1 = 3 * F + p2p;  // forward + twice for backward
  const double M = 4;
  // AdamW in float32: 28 B an element (gradient read, weight and two moments read and written),
  // stage 0's two weights of 65,536 elements at 1e12 B/s.
  const double optimizer = 2 * 65536.0 * 28 / 1e12;
  for (const char* bandwidth : {"1e11", "1e10"}) {
    CAPTURE(bandwidth);
    const double bw = std::stod(bandwidth);
    Compiled c = compileAllRanks(model(bandwidth));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    auto e = estimateClusterStep(c.global, c.options);
    REQUIRE(e);
    CHECK(e->slowestStage == 0);
    CHECK(e->compute == relative(M * 3 * 2 * F).epsilon(1e-9));
    // 1F1B run through (stage 0: forward 2F + p, backward 4F; stage 1: forward F, backward
    // 2F + p): stage 0 runs F0 F1, waits F for stage 1's backward of micro-batch 0 (done at
    // 5F + 2p), then runs B0 F2 B1 F3 B2 back to back; stage 1's last backward ends at 20F + 5p
    // (after stage 0's F3 at 17F + 4p), which with p > F is after stage 0's B2 ends (21F + 4p)
    // by p - F. Idle in all: p, where 1F1B's closed form charges a whole slot (6F + p).
    CHECK(p2p > F);
    CHECK(e->pipelineBubble == relative(p2p).epsilon(1e-9));
    CHECK(stage1 < stage0);
    // Each stage all-reduces its weights' gradients over its 2 replicas inside its node, in one
    // bucket (under Megatron's 40 M elements): 2 (n - 1)/n = 1 of the bytes at the intra-node
    // bandwidth plus 2 ring passes of one step's latency. Stage 0: 512 KiB with one latency pair,
    // not one a parameter; behind its last backward (2 products' backward, 4F).
    const double R0 = 524288 / bw + 2 * 2e-6, R1 = 262144 / bw + 2 * 2e-6;
    const double exposed0 = std::max(0.0, R0 - 4 * F), exposed1 = std::max(0.0, R1 - 2 * F);
    if (bandwidth == std::string("1e11")) {
      CHECK(R0 < 4 * F);  // hidden: nothing exposed
      CHECK(e->gradientSyncExposed == 0);
    } else {
      CHECK(exposed0 > exposed1);
      CHECK(e->gradientSyncExposed == relative(exposed0).epsilon(1e-9));
      CHECK(e->gradientSync == relative(R0).epsilon(1e-9));
    }
    CHECK(e->exposedCommunication == relative(M * p2p + std::max(exposed0, exposed1)).epsilon(1e-9));
    CHECK(e->optimizer == relative(optimizer).epsilon(1e-9));
    CHECK(e->total == relative(M * stage0 + p2p + std::max(exposed0, exposed1) + optimizer).epsilon(1e-9));
  }
}

TEST_CASE("virtual stages: a stage's in-flight chunks hold whole bytes") {
  // Six products over 2 stages x 3 virtual stages (stage 0 runs a, c, e), 4 micro-batches.
  // Megatron's interleaved warm-up on stage 0: (P - 1) * 2 + (v - 1) * P + 1 = 7 chunk passes in
  // flight, 7/3 micro-batches; the other 4/3 lie under the walked one. Stage 0 keeps x, b and d
  // for its weights' gradients: 512 x (256 + 128 + 64) float32 = 917,504 bytes, which 3 does
  // not divide, so the others' are 4/3 of it rounded up to a whole byte: 1,223,339.
  const std::string model =
      "parallel: {device_num: 2, pipeline_stages: 2, micro_batches: 4, virtual_stages: 3, training: true}\n"
      "inputs: [{name: x, shape: [512, 256], dtype: float32}]\n"
      "parameters:\n"
      "  - {name: w0, shape: [256, 64], dtype: float32}\n  - {name: w1, shape: [64, 128], dtype: float32}\n"
      "  - {name: w2, shape: [128, 64], dtype: float32}\n  - {name: w3, shape: [64, 64], dtype: float32}\n"
      "  - {name: w4, shape: [64, 64], dtype: float32}\n  - {name: w5, shape: [64, 64], dtype: float32}\n"
      "ops:\n"
      "  - {name: a, type: MatMul, inputs: [x, w0]}\n  - {name: b, type: MatMul, inputs: [a, w1]}\n"
      "  - {name: c, type: MatMul, inputs: [b, w2]}\n  - {name: d, type: MatMul, inputs: [c, w3]}\n"
      "  - {name: e, type: MatMul, inputs: [d, w4]}\n  - {name: f, type: MatMul, inputs: [e, w5]}\n"
      "outputs: [f]\n"
      "stages: {a: 0, b: 1, c: 2, d: 3, e: 4, f: 5}\n";
  Compiled c = compileAllRanks(model);
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  MemoryEstimate s0 = estimateStageMemory(c.global, c.options, 0);
  REQUIRE(s0.training);
  CHECK(s0.training->inFlightMicroBatches == doctest::Approx(7.0 / 3));
  CHECK(s0.training->savedActivationBytes == 917504);
  CHECK(s0.training->otherMicroBatchesBytes() == 1223339);
  CHECK(s0.training->peakBytes == std::floor(s0.training->peakBytes));
  CHECK(s0.training->firstStepPeakBytes == std::floor(s0.training->firstStepPeakBytes));
}

}  // namespace irc::test
