// The estimated step laid out in time (passes/analysis/step_timeline.h): the pipeline's orders
// written out by hand from PipeDream-Flush's and Megatron-LM's schedules, spans from the
// closed forms, and a GPT's timeline against its estimate and its memory estimate.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dumps/trace_json.h"
#include "passes/analysis/pipeline_order.h"
#include "passes/analysis/pipeline_split.h"
#include "passes/analysis/step_timeline.h"
#include "tests/approx.h"
#include "tests/pipeline_util.h"
#include "tools/bench/transformer_model.h"

namespace irc::test {
namespace {

std::string orderText(const std::vector<PipelinePass>& passes, bool chunks) {
  std::string out;
  for (const PipelinePass& p : passes)
    out += fmt::format("{}{}{}{}", out.empty() ? "" : " ", p.forward ? "F" : "B", p.microBatch,
                       chunks ? fmt::format(".{}", p.chunk) : "");
  return out;
}

PassSeconds uniform(int64_t stages, int64_t chunks, double forward, double backward) {
  return {std::vector<std::vector<double>>(stages, std::vector<double>(chunks, forward)),
          std::vector<std::vector<double>>(stages, std::vector<double>(chunks, backward))};
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
}

TEST_CASE("pipeline starts: the schedules' spans come out as their closed forms") {
  // 1F1B with every pass even (forward f, backward b): (M + P - 1)(f + b) (Narayanan et al. 2021).
  CHECK(pipelineSpan(pipelineOrder(4, 8, 1, true), uniform(4, 1, 1, 2)) == 33);
  CHECK(pipelineSpan(pipelineOrder(8, 3, 1, true), uniform(8, 1, 1, 2)) == 30);
  // Interleaved with chunk passes f / v and b / v: M (f + b) + (P - 1)(f + b) / v.
  CHECK(pipelineSpan(pipelineOrder(2, 4, 2, true), uniform(2, 2, 0.5, 1)) == 13.5);
  CHECK(pipelineSpan(pipelineOrder(4, 8, 2, true), uniform(4, 2, 0.5, 1)) == 28.5);
  CHECK(pipelineSpan(pipelineOrder(4, 8, 4, true), uniform(4, 4, 0.25, 0.5)) == relative(24 + 3 * 3 / 4.0));
  // Forward only: (M + P - 1) f.
  CHECK(pipelineSpan(pipelineOrder(4, 8, 1, false), uniform(4, 1, 1, 0)) == 11);
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
