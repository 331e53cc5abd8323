// The estimated step laid out in time (cost/step_timeline.h): the pipeline's orders
// written out by hand from PipeDream-Flush's and Megatron-LM's schedules, spans from the
// closed forms, and a GPT's timeline against its estimate and its memory estimate.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dumps/trace_json.h"
#include "plan/pipeline_order.h"
#include "cost/stage_estimate.h"
#include "cost/step_timeline.h"
#include "tests/approx.h"
#include "tests/pipeline_util.h"
#include "tools/bench/transformer_model.h"

namespace irc::test {
namespace {

std::string orderText(const std::vector<PipelinePass>& passes, bool chunks) {
  std::string out;
  for (const PipelinePass& p : passes)
    out += fmt::format("{}{}{}{}", out.empty() ? "" : " ",
                       p.kind == PassKind::Forward    ? "F"
                       : p.kind == PassKind::Backward ? "B"
                                                      : "W",
                       p.microBatch, chunks ? fmt::format(".{}", p.chunk) : "");
  return out;
}

PassSeconds uniform(int64_t stages, int64_t chunks, double forward, double backward, double weight = 0) {
  return {std::vector<std::vector<double>>(stages, std::vector<double>(chunks, forward)),
          std::vector<std::vector<double>>(stages, std::vector<double>(chunks, backward)),
          std::vector<std::vector<double>>(stages, std::vector<double>(chunks, weight))};
}

double spanOf(PipelineSchedule schedule, int64_t stages, int64_t micro, int64_t chunks, bool training, const PassSeconds& s) {
  return runPipeline(schedule, stages, micro, chunks, training, s).span;
}

// An 8-layer GPT (tools/bench's, tensor-parallel 2, data-parallel 2) in 4 stages of 4 ranks, 8
// micro-batches, on a DGX H100; with `chunks` 2 each stage holds two single-layer chunks.
std::string gpt(int64_t chunks, const std::string& extra = "") {
  std::string yaml = bench::transformerModel(8, 2, 2);
  size_t at = yaml.find("parallel: {device_num: 4}");
  REQUIRE(at != std::string::npos);
  yaml.replace(
      at, 25,
      fmt::format("parallel: {{device_num: 16, pipeline_stages: 4, micro_batches: 8, virtual_stages: {}, training: true, "
                  "precision: bf16_mixed{}}}\ncluster: {{preset: dgx-h100}}",
                  chunks, extra));
  std::string stages;
  for (int l = 0; l < 8; ++l) stages += fmt::format("{}\"l{}.*\": {}", l ? ", " : "", l, chunks == 1 ? l / 2 : l);
  return yaml + "stages: {" + stages + "}\n";
}

}  // namespace

TEST_CASE("pipeline orders, written out by hand: 1F1B's warm-up, steady state and drain; Megatron's interleaving") {
  // PipeDream-Flush (1F1B) on 4 stages, 8 micro-batches: stage s runs P - s - 1 forwards ahead.
  auto f1b1 = pipelineOrder(4, 8, 1, true);
  CHECK(orderText(f1b1[0], false) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  CHECK(orderText(f1b1[2], false) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  CHECK(orderText(f1b1[3], false) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // Fewer micro-batches than stages: all forwards first.
  CHECK(orderText(pipelineOrder(4, 2, 1, true)[0], false) == "F0 F1 B0 B1");
  // Megatron-LM's interleaved 1F1B, 2 stages x 2 chunks, 4 micro-batches: stage 0 warms up with
  // (P - 1) * 2 + (v - 1) * P = 4 chunk passes, micro-batches in groups of P per chunk; the
  // backwards take the chunks in reverse.
  auto interleaved = pipelineOrder(2, 4, 2, true);
  CHECK(orderText(interleaved[0], true) == "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  CHECK(orderText(interleaved[1], true) == "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  // Inference: the forwards alone.
  CHECK(orderText(pipelineOrder(2, 3, 1, false)[1], false) == "F0 F1 F2");
  // GPipe: every forward, then every backward.
  CHECK(orderText(pipelineOrder(2, 3, 1, true, PipelineSchedule::Gpipe)[0], false) == "F0 F1 F2 B0 B1 B2");
  // ZB-H1 (Qi et al. 2023): 1F1B's order with the weight gradients apart; a stage runs a W before
  // a forward once it holds P = 4 micro-batches whose W is due, a W after each B once the
  // forwards are done, the rest at the end. Stage 3 holds 4 where 1F1B held 1.
  auto zb = pipelineOrder(4, 8, 1, true, PipelineSchedule::ZeroBubble);
  CHECK(orderText(zb[0], false) == "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7");
  CHECK(orderText(zb[3], false) == "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7");
}

TEST_CASE("pipeline starts: the schedules' spans come out as their closed forms") {
  // 1F1B with every pass even (forward f, backward b): (M + P - 1)(f + b) (Narayanan et al. 2021).
  const auto one = PipelineSchedule::OneFOneB, interleaved = PipelineSchedule::Interleaved;
  CHECK(spanOf(one, 4, 8, 1, true, uniform(4, 1, 1, 2)) == 33);
  CHECK(spanOf(one, 8, 3, 1, true, uniform(8, 1, 1, 2)) == 30);
  // Interleaved with chunk passes f / v and b / v: M (f + b) + (P - 1)(f + b) / v.
  CHECK(spanOf(interleaved, 2, 4, 2, true, uniform(2, 2, 0.5, 1)) == 13.5);
  CHECK(spanOf(interleaved, 4, 8, 2, true, uniform(4, 2, 0.5, 1)) == 28.5);
  CHECK(spanOf(interleaved, 4, 8, 4, true, uniform(4, 4, 0.25, 0.5)) == relative(24 + 3 * 3 / 4.0));
  // Forward only: (M + P - 1) f.
  CHECK(spanOf(one, 4, 8, 1, false, uniform(4, 1, 1, 0)) == 11);
  // GPipe: the same (M + P - 1)(f + b), all forwards first.
  CHECK(spanOf(PipelineSchedule::Gpipe, 4, 8, 1, true, uniform(4, 1, 1, 2)) == 33);
  // ZB-H1 with F = B = W = 1 (the paper's even passes): M (F + B + W) + (P - 1)(F + B - W)
  // = 24 + 3, against 1F1B's (M + P - 1)(F + B + W) = 33 (Qi et al. 2023, §3.1).
  CHECK(spanOf(PipelineSchedule::ZeroBubble, 4, 8, 1, true, uniform(4, 1, 1, 1, 1)) == 27);
  // Uneven passes too: F 1, B 1.2, W 0.8 -> 8 x 3 + 3 x 1.4; 8 stages, 16 micro-batches, W 0.5.
  CHECK(spanOf(PipelineSchedule::ZeroBubble, 4, 8, 1, true, uniform(4, 1, 1, 1.2, 0.8)) == relative(24 + 3 * 1.4));
  CHECK(spanOf(PipelineSchedule::ZeroBubble, 8, 16, 1, true, uniform(8, 1, 1, 1, 0.5)) == relative(16 * 2.5 + 7 * 1.5));
  // Stage 0's first backward waits for micro-batch 0 through every stage and back: 4 f + 3 b.
  auto starts = pipelineStarts(pipelineOrder(4, 8, 1, true), uniform(4, 1, 1, 2));
  CHECK(starts[0][4] == 4 + 3 * 2);
  CHECK(starts[3][1] == 4);
}

TEST_CASE("a 4-stage GPT's timeline: every pass on every stage, the estimate's span, 1F1B's order, the memory peaks") {
  for (int64_t chunks : {1, 2}) {
    CAPTURE(chunks);
    Compiled c = compileAllRanks(gpt(chunks));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    auto timeline = stepTimeline(c.global, c.options);
    REQUIRE(timeline);
    const ClusterStepEstimate& e = timeline->estimate;
    CHECK(timeline->span == relative(e.total).epsilon(1e-9));
    std::map<int32_t, std::vector<std::string>> slots;
    double end = 0;
    for (const TimelineSlice& s : timeline->slices) {
      end = std::max(end, s.start + s.seconds);
      if (s.slot) slots[s.stage].push_back(s.name);
    }
    CHECK(end == relative(e.total).epsilon(1e-9));
    REQUIRE(slots.size() == 4);
    for (auto& [stage, names] : slots) {
      CAPTURE(stage);
      CHECK(names.size() == static_cast<size_t>(2 * 8 * chunks));
      CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
    }
    if (chunks == 1) {
      const std::vector<std::string> warmUp{"forward 0", "forward 1", "forward 2", "forward 3", "backward 0", "forward 4"};
      CHECK(std::vector<std::string>(slots[0].begin(), slots[0].begin() + 6) == warmUp);
    }
    // Each stage's counter peaks where its memory estimate does: under 1F1B the stage holds
    // P - s micro-batches' saved activations at once, interleaved Megatron's count of chunks,
    // as the estimate counts them.
    for (int32_t s = 0; s < 4; ++s) {
      double peak = 0;
      for (const MemorySample& m : timeline->memory)
        if (m.stage == s) peak = std::max(peak, m.bytes);
      const double expected = estimateStageMemory(c.global, c.options, s).training->peakBytes;
      CHECK(timeline->stagePeakBytes[s] == expected);
      // The peak's terms add up to it, the other micro-batches in flight among them: P - s - 1
      // of them under 1F1B, each with the stage's saved activations (the last stage peaks in
      // its loss with none).
      const TrainingMemory t = *estimateStageMemory(c.global, c.options, s).training;
      double sum = 0, inFlight = 0;
      for (const PeakTerm& term : peakTerms(t)) {
        sum += term.bytes;
        if (term.name == "in-flight activations") inFlight = term.bytes;
      }
      CHECK(sum == relative(t.peakBytes).epsilon(1e-12));
      // Every weight of every chunk gets its gradient, the last stage's earlier chunks' too
      // (what they send on gets its gradient back; the walk once started from the loss alone).
      CHECK(t.gradientBytes == t.parameterBytes);
      if (chunks == 1) CHECK(inFlight == relative((3.0 - s) * t.savedActivationBytes).epsilon(1e-12));
      CHECK(peak == relative(expected).epsilon(1e-12));
    }
    // The ops inside a pass end by its end, on the compute stream.
    const TimelineSlice* pass = nullptr;
    for (const TimelineSlice& s : timeline->slices) {
      if (s.stream != TimelineStream::Compute || s.microBatch < 0) continue;
      if (s.slot) pass = &s;
      else if (pass && s.stage == pass->stage) CHECK(s.start + s.seconds <= pass->start + pass->seconds + 1e-15);
    }
  }
}

TEST_CASE("schedules on a 4-stage GPT: each bubble as its accounting from the passes, zero-bubble's below 1F1B's") {
  // The report's own F, B, W of the slowest stage: 1F1B's and GPipe's bubble (P - 1)(F + B + W),
  // ZB-H1's (P - 1)(F + B - W); each timeline spans its estimate.
  std::map<std::string, double> steps;
  for (const char* schedule : {"1f1b", "gpipe", "zero_bubble"}) {
    CAPTURE(schedule);
    Compiled c = compileAllRanks(gpt(1, fmt::format(", pipeline_schedule: {}", schedule)));
    REQUIRE_MESSAGE(c.errors.empty(), c.errors);
    auto timeline = stepTimeline(c.global, c.options);
    REQUIRE(timeline);
    const ClusterStepEstimate& e = timeline->estimate;
    CHECK(timeline->span == relative(e.total).epsilon(1e-9));
    const ClusterStepEstimate::Stage& slowest = e.stages[e.slowestStage];
    const int32_t k = e.slowestStage;
    const double F = e.passes.forward[k][0], B = e.passes.backward[k][0], W = e.passes.weight[k][0];
    CHECK(F == relative(slowest.forward).epsilon(1e-12));
    const bool zero = std::string(schedule) == "zero_bubble";
    CHECK(zero == (W > 0));
    if (!zero) CHECK(F + B == relative(slowest.forward + slowest.backward).epsilon(1e-12));
    CHECK(e.pipelineBubble == relative(3 * (zero ? F + B - W : F + B + W)).epsilon(0.02));
    steps[schedule] = e.total;
    // GPipe holds all 8 micro-batches on every stage, ZB-H1 1F1B's first stage's 4 on each.
    const double inFlight = estimateStageMemory(c.global, c.options, 3).training->inFlightMicroBatches;
    CHECK(inFlight == (zero ? 4 : std::string(schedule) == "gpipe" ? 8 : 1));
  }
  CHECK(steps["zero_bubble"] < steps["1f1b"]);
  // GPipe's forwards run at the pace of the stage whose forward is longest (the first, with the
  // embedding), 1F1B's closed form at the slowest stage's whole micro-batch: within a percent.
  CHECK(steps["gpipe"] >= steps["1f1b"]);
  CHECK(steps["gpipe"] == relative(steps["1f1b"]).epsilon(0.01));
}

TEST_CASE("zero-bubble's weight gradient: half of a product's backward, its input gradient the other half") {
  // Two stages of one rank, a MatMul with its weight each: stage 1's backward is its product's
  // two GEMMs (the input's gradient and the weight's, each the forward's FLOPs) and the Send of
  // the input's gradient back to stage 0; W is one of the GEMMs.
  Compiled c =
      compileAllRanks(twoStageProducts("{device_num: 2, pipeline_stages: 2, micro_batches: 4, training: true, precision: "
                                       "bf16_mixed, pipeline_schedule: zero_bubble}"));
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  auto e = estimateClusterStep(c.global, c.options);
  REQUIRE(e);
  const ClusterStepEstimate::Stage& last = e->stages[1];
  CHECK(last.chunkWeight[0] > 0);
  CHECK(2 * last.chunkWeight[0] == relative(last.chunkBackward[0] - last.sentBackward).epsilon(1e-12));
}

TEST_CASE("recompute_layers: each stage's first layers recomputed, lowering its saved activations") {
  // The 8-layer GPT with each op in its layer's module (model.layers.N), two layers a stage:
  // [2, 1, 0, 0] recomputes layers 0 and 1 on stage 0, layer 2 on stage 1, nothing after.
  auto withModules = [](std::string yaml) {
    std::string out;
    size_t at = 0;
    for (size_t line = yaml.find('\n'); line != std::string::npos; at = line + 1, line = yaml.find('\n', at)) {
      std::string text = yaml.substr(at, line - at);
      size_t name = text.find("{name: l");
      if (name != std::string::npos && text.find(", type: ") != std::string::npos && text.back() == '}') {
        size_t digits = name + 8, end = text.find('.', digits);
        text.insert(text.size() - 1, ", module: model.layers." + text.substr(digits, end - digits));
      }
      out += text + "\n";
    }
    return out;
  };
  Compiled plain = compileAllRanks(withModules(gpt(1)));
  Compiled some = compileAllRanks(withModules(gpt(1, ", recompute_layers: [2, 1, 0, 0]")));
  REQUIRE_MESSAGE(plain.errors.empty(), plain.errors);
  REQUIRE_MESSAGE(some.errors.empty(), some.errors);
  std::map<int32_t, std::set<std::string>> recomputedLayers;
  for (OpId id : some.global.order) {
    const Op& op = some.global.op(id);
    if (!op.inserted() && std::as_const(op).annotation->recompute) recomputedLayers[op.stage].insert(some.global.moduleOf(op));
  }
  CHECK(recomputedLayers[0] == std::set<std::string>{"model.layers.0", "model.layers.1"});
  CHECK(recomputedLayers[1] == std::set<std::string>{"model.layers.2"});
  CHECK(recomputedLayers.count(2) == 0);
  CHECK(recomputedLayers.count(3) == 0);
  for (int32_t s = 0; s < 4; ++s) {
    CAPTURE(s);
    const double before = estimateStageMemory(plain.global, plain.options, s).training->savedActivationBytes;
    const double after = estimateStageMemory(some.global, some.options, s).training->savedActivationBytes;
    if (s < 2) CHECK(after < before);
    else CHECK(after == before);
  }
  // Recompute costs its forward again: stage 0 is slower.
  CHECK(estimateClusterStep(some.global, some.options)->stages[0].backward >
        estimateClusterStep(plain.global, plain.options)->stages[0].backward);
  // A stage asked for more layers than it holds, and a list of the wrong length.
  CHECK(compileAllRanks(withModules(gpt(1, ", recompute_layers: [3, 0, 0, 0]")))
            .errors.find("recompute_layers asks stage 0 for 3 layers; it has 2") != std::string::npos);
  CHECK(compileAllRanks(withModules(gpt(1, ", recompute_layers: [1, 0]")))
            .errors.find("recompute_layers lists 2 stages; the pipeline has 4") != std::string::npos);
}

TEST_CASE("pipeline_schedule: the names irc builds, the ones it does not, and what virtual stages need") {
  auto errors = [](const std::string& extra) { return compileAllRanks(gpt(1, extra)).errors; };
  CHECK(errors(", pipeline_schedule: dualpipe")
            .find("pipeline_schedule 'dualpipe' is not built in irc; valid: gpipe, 1f1b, "
                  "interleaved_1f1b, zero_bubble") != std::string::npos);
  CHECK(errors(", pipeline_schedule: 1f1b_zb").find("valid:") != std::string::npos);
  CHECK(errors(", pipeline_schedule: interleaved_1f1b").find("it needs virtual_stages > 1") != std::string::npos);
  CHECK(compileAllRanks(gpt(2, ", pipeline_schedule: zero_bubble")).errors.find("virtual_stages 2 needs interleaved_1f1b") !=
        std::string::npos);
  CHECK(compileAllRanks(gpt(2, ", pipeline_schedule: interleaved_1f1b")).errors.empty());
}

TEST_CASE("the Chrome trace: one process a stage, its streams named, complete events in microseconds, the counter") {
  Compiled c = compileAllRanks(gpt(1, ", zero_stage: 1"));
  REQUIRE_MESSAGE(c.errors.empty(), c.errors);
  auto timeline = stepTimeline(c.global, c.options);
  REQUIRE(timeline);
  std::ostringstream text;
  writeChromeTrace(text, *timeline, c.global, c.options, false);
  nlohmann::json trace = nlohmann::json::parse(text.str());
  CHECK(trace["otherData"]["estimated_step_seconds"].get<double>() == relative(timeline->estimate.total));
  std::set<int64_t> pids;
  std::map<std::string, int> threads;
  double begin = 1e300, end = 0;
  int counters = 0, backwardOps = 0, gathers = 0;
  for (const auto& ev : trace["traceEvents"]) {
    const std::string ph = ev["ph"];
    if (ph == "M" && ev["name"] == "thread_name") threads[ev["args"]["name"]]++;
    if (ph == "M" && ev["name"] == "process_name") pids.insert(ev["pid"].get<int64_t>());
    if (ph == "C") ++counters;
    if (ph != "X") continue;
    begin = std::min(begin, ev["ts"].get<double>());
    end = std::max(end, ev["ts"].get<double>() + ev["dur"].get<double>());
    CHECK(ev["dur"].get<double>() >= 0);
    if (ev["args"].contains("op") && ev["args"]["phase"] == "backward") ++backwardOps;
    if (ev["name"] == "ZeRO AllGather of the updated weights") ++gathers;
  }
  CHECK(pids == std::set<int64_t>{0, 1, 2, 3});
  CHECK(threads.size() == 4);
  CHECK(threads["compute"] == 4);
  CHECK(counters > 0);
  CHECK(backwardOps > 0);
  CHECK(gathers == 4);
  CHECK(begin == 0);
  CHECK(end == relative(timeline->estimate.total * 1e6).epsilon(1e-6));
  // --all-ranks: a process a rank, each its stage's events.
  std::ostringstream every;
  writeChromeTrace(every, *timeline, c.global, c.options, true);
  std::set<int64_t> ranks;
  const nlohmann::json all = nlohmann::json::parse(every.str());
  for (const auto& ev : all["traceEvents"])
    if (ev["ph"] == "M" && ev["name"] == "process_name") ranks.insert(ev["pid"].get<int64_t>());
  CHECK(ranks.size() == 16);
}

}  // namespace irc::test
