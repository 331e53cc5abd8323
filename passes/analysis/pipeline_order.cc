#include "passes/analysis/pipeline_order.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace irc {
namespace {

// The k-th forward (or backward) pass of an interleaved stage: its micro-batch and chunk.
PipelinePass interleavedPass(int64_t k, int64_t stages, int64_t chunks, bool forward) {
  const int64_t group = k / (stages * chunks), inGroup = k % (stages * chunks);
  int64_t chunk = inGroup / stages;
  if (!forward) chunk = chunks - 1 - chunk;
  return {group * stages + inGroup % stages, static_cast<int32_t>(chunk), forward};
}

}  // namespace

std::vector<std::vector<PipelinePass>> pipelineOrder(int64_t stages, int64_t microBatches, int64_t chunks, bool training) {
  stages = std::max<int64_t>(1, stages), microBatches = std::max<int64_t>(1, microBatches), chunks = std::max<int64_t>(1, chunks);
  std::vector<std::vector<PipelinePass>> order(stages);
  const int64_t passes = microBatches * chunks;
  for (int64_t s = 0; s < stages; ++s) {
    std::vector<PipelinePass>& out = order[s];
    if (!training) {
      for (int64_t k = 0; k < passes; ++k) out.push_back(interleavedPass(k, stages, chunks, true));
      continue;
    }
    const int64_t warmUp = std::min(passes, chunks == 1 ? stages - s - 1 : (stages - s - 1) * 2 + (chunks - 1) * stages);
    for (int64_t k = 0; k < warmUp; ++k) out.push_back(interleavedPass(k, stages, chunks, true));
    for (int64_t k = 0; k < passes - warmUp; ++k) {
      out.push_back(interleavedPass(warmUp + k, stages, chunks, true));
      out.push_back(interleavedPass(k, stages, chunks, false));
    }
    for (int64_t k = passes - warmUp; k < passes; ++k) out.push_back(interleavedPass(k, stages, chunks, false));
  }
  return order;
}

std::vector<std::vector<double>> pipelineStarts(const std::vector<std::vector<PipelinePass>>& order, const PassSeconds& seconds) {
  const int64_t stages = static_cast<int64_t>(order.size());
  const int64_t chunks = stages > 0 ? static_cast<int64_t>(seconds.forward[0].size()) : 1;
  int64_t micro = 0;
  for (const auto& passes : order)
    for (const PipelinePass& p : passes) micro = std::max(micro, p.microBatch + 1);
  const int64_t virtualStages = stages * chunks;
  constexpr double kPending = std::numeric_limits<double>::infinity();
  // When each (micro-batch, virtual stage)'s forward and backward end.
  std::vector<double> forwardEnd(micro * virtualStages, kPending), backwardEnd(micro * virtualStages, kPending);
  std::vector<std::vector<double>> starts(stages);
  std::vector<size_t> next(stages, 0);
  std::vector<double> free(stages, 0);
  size_t left = 0;
  for (const auto& passes : order) left += passes.size();
  // Each round runs, on every stage, the passes whose input is there; a round without one
  // would be a schedule that cannot run (none of the orders above).
  while (left > 0) {
    bool ran = false;
    for (int64_t s = 0; s < stages; ++s)
      while (next[s] < order[s].size()) {
        const PipelinePass& p = order[s][next[s]];
        const int64_t vs = p.chunk * stages + s;
        double ready = 0;
        if (p.forward && vs > 0) ready = forwardEnd[p.microBatch * virtualStages + vs - 1];
        if (!p.forward)
          ready = vs + 1 < virtualStages ? backwardEnd[p.microBatch * virtualStages + vs + 1]
                                         : forwardEnd[p.microBatch * virtualStages + vs];
        if (ready == kPending) break;
        const double start = std::max(free[s], ready);
        const double length = (p.forward ? seconds.forward : seconds.backward)[s][p.chunk];
        free[s] = start + length;
        (p.forward ? forwardEnd : backwardEnd)[p.microBatch * virtualStages + vs] = free[s];
        starts[s].push_back(start);
        ++next[s], --left, ran = true;
      }
    if (!ran) throw std::logic_error("pipelineStarts: the schedule's passes wait on each other");
  }
  return starts;
}

double pipelineSpan(const std::vector<std::vector<PipelinePass>>& order, const PassSeconds& seconds) {
  const auto starts = pipelineStarts(order, seconds);
  double span = 0;
  for (size_t s = 0; s < order.size(); ++s)
    if (!order[s].empty()) {
      const PipelinePass& last = order[s].back();
      span = std::max(span, starts[s].back() + (last.forward ? seconds.forward : seconds.backward)[s][last.chunk]);
    }
  return span;
}

}  // namespace irc
