#include "plan/pipeline_order.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace irc {
namespace {

constexpr double kPending = std::numeric_limits<double>::infinity();

// The k-th forward (or backward) pass of an interleaved stage: its micro-batch and chunk.
PipelinePass interleavedPass(int64_t k, int64_t stages, int64_t chunks, bool forward) {
  const int64_t group = k / (stages * chunks), inGroup = k % (stages * chunks);
  int64_t chunk = inGroup / stages;
  if (!forward) chunk = chunks - 1 - chunk;
  return {group * stages + inGroup % stages, static_cast<int32_t>(chunk), forward ? PassKind::Forward : PassKind::Backward};
}

// When each (micro-batch, virtual stage)'s passes end, as a run fills them in.
class PassEnds {
 public:
  PassEnds(int64_t micro, int64_t virtualStages)
      : virtualStages_(virtualStages),
        forward_(micro * virtualStages, kPending),
        backward_(micro * virtualStages, kPending),
        weight_(micro * virtualStages, kPending) {}
  // When `p` (on virtual stage `vs`) may start by its inputs; kPending while one is missing.
  double ready(const PipelinePass& p, int64_t vs) const {
    const int64_t at = p.microBatch * virtualStages_ + vs;
    switch (p.kind) {
      case PassKind::Forward: return vs > 0 ? forward_[at - 1] : 0;
      case PassKind::Backward: return vs + 1 < virtualStages_ ? backward_[at + 1] : forward_[at];
      case PassKind::Weight: return backward_[at];
    }
    return kPending;
  }
  void done(const PipelinePass& p, int64_t vs, double end) {
    const int64_t at = p.microBatch * virtualStages_ + vs;
    (p.kind == PassKind::Forward ? forward_ : p.kind == PassKind::Backward ? backward_ : weight_)[at] = end;
  }

 private:
  int64_t virtualStages_;
  std::vector<double> forward_, backward_, weight_;
};

int64_t microBatchesOf(const std::vector<std::vector<PipelinePass>>& order) {
  int64_t micro = 0;
  for (const auto& passes : order)
    for (const PipelinePass& p : passes) micro = std::max(micro, p.microBatch + 1);
  return micro;
}

double spanOf(const std::vector<std::vector<PipelinePass>>& order, const std::vector<std::vector<double>>& starts,
              const PassSeconds& seconds) {
  double span = 0;
  for (size_t s = 0; s < order.size(); ++s)
    if (!order[s].empty()) span = std::max(span, starts[s].back() + seconds.of(order[s].back(), static_cast<int64_t>(s)));
  return span;
}

// ZB-H1 (Qi et al. 2023, §3.1): 1F1B's order with each backward split into its input gradient
// B and its weight gradient W. Every stage may hold P micro-batches whose W is still to run (the
// first stage's 1F1B count, so that no stage's peak passes 1F1B's highest), so stage s warms up
// with min(P - s, M) forwards and runs a W before a forward only once it holds P; once the
// forwards are done, a W follows each B, and the rest drain at the end. Its span with even passes
// is M (F + B + W) + (P - 1)(F + B - W): B runs earlier on every stage than 1F1B's backward
// and the W left over fill its tail.
std::vector<PipelinePass> zeroBubbleOrder(int64_t stages, int64_t stage, int64_t micro) {
  std::vector<PipelinePass> out;
  auto pass = [](int64_t m, PassKind kind) { return PipelinePass{m, 0, kind}; };
  int64_t f = std::min(stages - stage, micro), b = 0, w = 0;
  for (int64_t k = 0; k < f; ++k) out.push_back(pass(k, PassKind::Forward));
  while (b < micro) {
    out.push_back(pass(b++, PassKind::Backward));
    if (f < micro) {
      if (f - w == stages) out.push_back(pass(w++, PassKind::Weight));
      out.push_back(pass(f++, PassKind::Forward));
    } else if (w < b) {
      out.push_back(pass(w++, PassKind::Weight));
    }
  }
  while (w < micro) out.push_back(pass(w++, PassKind::Weight));
  return out;
}

}  // namespace

std::vector<std::vector<PipelinePass>> pipelineOrder(int64_t stages, int64_t microBatches, int64_t chunks, bool training,
                                                     PipelineSchedule schedule) {
  stages = std::max<int64_t>(1, stages), microBatches = std::max<int64_t>(1, microBatches), chunks = std::max<int64_t>(1, chunks);
  std::vector<std::vector<PipelinePass>> order(stages);
  const int64_t passes = microBatches * chunks;
  for (int64_t s = 0; s < stages; ++s) {
    std::vector<PipelinePass>& out = order[s];
    if (training && traitsOf(schedule).splitsWeightGradient && chunks == 1) {
      out = zeroBubbleOrder(stages, s, microBatches);
      continue;
    }
    if (!training || schedule == PipelineSchedule::Gpipe) {
      for (int64_t k = 0; k < passes; ++k) out.push_back(interleavedPass(k, stages, chunks, true));
      for (int64_t k = 0; training && k < passes; ++k) out.push_back(interleavedPass(k, stages, chunks, false));
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
  PassEnds ends(microBatchesOf(order), stages * chunks);
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
        const double ready = ends.ready(p, vs);
        if (ready == kPending) break;
        const double start = std::max(free[s], ready);
        free[s] = start + seconds.of(p, s);
        ends.done(p, vs, free[s]);
        starts[s].push_back(start);
        ++next[s], --left, ran = true;
      }
    if (!ran) throw std::logic_error("pipelineStarts: the schedule's passes wait on each other");
  }
  return starts;
}

PipelineRun runPipeline(PipelineSchedule schedule, int64_t stages, int64_t microBatches, int64_t chunks, bool training,
                        const PassSeconds& seconds) {
  PipelineRun run;
  run.order = pipelineOrder(stages, microBatches, chunks, training, schedule);
  run.starts = pipelineStarts(run.order, seconds);
  run.span = spanOf(run.order, run.starts, seconds);
  return run;
}

}  // namespace irc
