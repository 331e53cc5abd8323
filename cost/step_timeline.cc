#include "cost/step_timeline.h"

#include <algorithm>

#include "cost/memory_estimate.h"
#include "plan/pipeline_order.h"
#include "cost/stage_estimate.h"
#include "cost/step_cost.h"

namespace irc {
namespace {

// A model op of a stage's chunk with its terms (step_cost.h), and where the memory walk of its
// stage puts it: the highest live bytes from the previous model op's position to its own, in the
// forward and in the backward (the inserted ops before it belong to its input edges).
struct StageOp {
  const Op* op = nullptr;
  StepTime t;
  bool again = false;  // recomputed before its backward
  double weight = 0;   // of its backward kernels, its weight's gradient (zero-bubble's W pass)
  double forwardLive = 0, backwardLive = 0;
  double comm() const { return t.forwardComm + t.redistribution; }
};

// One stage's memory as the estimate walks it (one micro-batch, the others' saved activations
// under it), and how to read that walk at a moment of the schedule: with `othersChunks` chunk
// passes of other micro-batches in flight instead of the estimate's.
struct StageMemory {
  std::optional<TrainingMemory> training;
  std::vector<double> inferenceLive;
  double peak = 0;
  double chunks = 1;
  double at(double walked, int64_t othersChunks) const {
    if (!training) return walked;
    return walked - training->otherMicroBatchesBytes() + training->savedOfChunks(static_cast<double>(othersChunks), chunks);
  }
};

StageMemory stageMemory(const Graph& graph, const ParallelSettings& settings, int32_t stage, int64_t chunks) {
  MemoryEstimate m = graph.stageDevices > 0 ? estimateStageMemory(graph, settings, stage) : estimateMemory(graph, settings);
  StageMemory out;
  out.chunks = static_cast<double>(chunks);
  out.training = m.training;
  out.inferenceLive = m.inference.liveAtOp;
  out.peak = m.training ? m.training->peakBytes : m.inference.peakBytes;
  return out;
}

// Each op's range of its stage's walk (the stage's ops in the global order, as the stage's view
// keeps them), its highest live bytes in it.
void placeInWalk(const Graph& graph, int32_t stage, bool pipelined, const StageMemory& memory, std::vector<StageOp*>& ops) {
  std::vector<int> position(graph.ops.size(), -1);
  int positions = 0;
  for (OpId id : graph.order)
    if (!pipelined || graph.op(id).stage == stage) position[id] = positions++;
  std::sort(ops.begin(), ops.end(), [&](const StageOp* a, const StageOp* b) {
    return position[a->op - graph.ops.data()] < position[b->op - graph.ops.data()];
  });
  auto highest = [&](const std::vector<double>& live, int from, int to) {
    double h = 0;
    for (int p = from; p <= to && p < static_cast<int>(live.size()); ++p) h = std::max(h, live[p]);
    return h;
  };
  int from = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    int to = i + 1 == ops.size() ? positions - 1 : position[ops[i]->op - graph.ops.data()];
    if (memory.training) {
      ops[i]->forwardLive = highest(memory.training->forwardLiveAtOp, from, to);
      ops[i]->backwardLive = highest(memory.training->backwardLiveAtOp, from, to);
    } else {
      ops[i]->forwardLive = highest(memory.inferenceLive, from, to);
    }
    from = to + 1;
  }
}

std::string passName(const PipelinePass& p, int64_t chunks) {
  std::string name = (p.kind == PassKind::Forward    ? "forward "
                      : p.kind == PassKind::Backward ? "backward "
                                                     : "weight gradient ") +
                     std::to_string(p.microBatch);
  if (chunks > 1) name += " (chunk " + std::to_string(p.chunk) + ")";
  return name;
}

// Lays out one stage's passes and the memory they hold.
class StageLayout {
 public:
  StageLayout(StepTimeline& out, int32_t stage, double stageDevices) : out_(out), stage_(stage), stageDevices_(stageDevices) {}

  void slice(TimelineStream stream, TimelinePhase phase, std::string name, double start, double seconds,
             const PipelinePass* pass = nullptr, const Op* op = nullptr, double flops = 0) {
    // An op inside its pass ends by the pass's end (the sums differ in their last bits).
    if (pass) seconds = std::min(seconds, passEnd_ - start);
    if (seconds <= 0) return;
    TimelineSlice s;
    s.stage = stage_, s.stream = stream, s.phase = phase, s.name = std::move(name), s.start = start, s.seconds = seconds;
    if (pass) s.microBatch = pass->microBatch, s.chunk = pass->chunk;
    if (op) s.op = static_cast<OpId>(op - opsBase_);
    s.flops = flops;
    out_.slices.push_back(std::move(s));
  }
  // Two samples at one moment (the loss, then the backward's first op) are one, the higher: a
  // viewer shows one value an instant, and the peak must be the one seen.
  void sample(double time, double bytes) {
    if (!out_.memory.empty() && out_.memory.back().stage == stage_ && out_.memory.back().time == time)
      out_.memory.back().bytes = std::max(out_.memory.back().bytes, bytes);
    else out_.memory.push_back({stage_, time, bytes});
  }

  // A forward pass: each op's input redistributions, its kernel, the collectives completing it;
  // then the Sends the estimate counts exposed.
  void forward(const PipelinePass& p, double start, const std::vector<StageOp>& ops, double sent, const StageMemory& memory,
               int64_t others) {
    double t = start;
    for (const StageOp& o : ops) {
      sample(t, memory.at(o.forwardLive, others));
      slice(TimelineStream::Collectives, TimelinePhase::Forward, o.op->name + " (redistribution)", t, o.t.redistribution, &p,
            o.op);
      t += o.t.redistribution;
      slice(TimelineStream::Compute, TimelinePhase::Forward, o.op->name, t, o.t.compute, &p, o.op,
            o.t.globalFlops / stageDevices_);
      t += o.t.compute;
      slice(TimelineStream::Collectives, TimelinePhase::Forward, o.op->name + " (collective)", t, o.t.forwardComm, &p, o.op);
      t += o.t.forwardComm;
    }
    slice(TimelineStream::PipelineTransfers, TimelinePhase::Forward, "send activations", t, sent, &p);
  }

  // A backward pass, the ops in reverse: a recomputed op's forward again, its backward kernels,
  // its collectives' duals; then the gradients' Sends.
  void backward(const PipelinePass& p, double start, const std::vector<StageOp>& ops, double sent, const StageMemory& memory,
                int64_t others, bool weightApart) {
    double t = start;
    // The walk's loss is the whole micro-batch's forward done: the last chunk's backward starts there.
    if (memory.training && p.chunk + 1 == static_cast<int32_t>(memory.chunks))
      sample(t, memory.at(memory.training->lossLiveBytes, others));
    for (auto o = ops.rbegin(); o != ops.rend(); ++o) {
      sample(t, memory.at(o->backwardLive, others));
      if (o->again) {
        slice(TimelineStream::Compute, TimelinePhase::Backward, o->op->name + " (recomputed)", t, o->t.compute, &p, o->op,
              o->t.globalFlops / stageDevices_);
        t += o->t.compute;
        slice(TimelineStream::Collectives, TimelinePhase::Backward, o->op->name + " (recomputed collective)", t, o->comm(), &p,
              o->op);
        t += o->comm();
      }
      // Apart from its weight's gradient, an op's backward is its input gradient (half a product's).
      const double kernels = o->t.backwardCompute - (weightApart ? o->weight : 0);
      slice(TimelineStream::Compute, TimelinePhase::Backward, o->op->name, t, kernels, &p, o->op,
            (weightApart && o->weight > 0 ? 1 : 2) * o->t.globalFlops / stageDevices_);
      t += kernels;
      slice(TimelineStream::Collectives, TimelinePhase::Backward, o->op->name + " (collective)", t, o->comm(), &p, o->op);
      t += o->comm();
    }
    slice(TimelineStream::PipelineTransfers, TimelinePhase::Backward, "send gradients", t, sent, &p);
  }

  // Zero-bubble's W pass: the products' weight gradients, the ops in reverse.
  void weightGradients(const PipelinePass& p, double start, const std::vector<StageOp>& ops) {
    double t = start;
    for (auto o = ops.rbegin(); o != ops.rend(); ++o) {
      if (o->weight <= 0) continue;
      slice(TimelineStream::Compute, TimelinePhase::Backward, o->op->name + " (weight gradient)", t, o->weight, &p, o->op,
            o->t.globalFlops / stageDevices_);
      t += o->weight;
    }
  }

  const Op* opsBase_ = nullptr;
  double passEnd_ = 0;

 private:
  StepTimeline& out_;
  int32_t stage_;
  double stageDevices_;
};

}  // namespace

const char* timelineStreamName(TimelineStream stream) {
  switch (stream) {
    case TimelineStream::Compute: return "compute";
    case TimelineStream::Collectives: return "collectives (TP, CP, EP, redistribution)";
    case TimelineStream::PipelineTransfers: return "pipeline Send/Receive";
    case TimelineStream::GradientSync: return "data-parallel gradient sync";
  }
  return "";
}

const char* timelinePhaseName(TimelinePhase phase) {
  switch (phase) {
    case TimelinePhase::Forward: return "forward";
    case TimelinePhase::Backward: return "backward";
    case TimelinePhase::Optimizer: return "optimizer";
    case TimelinePhase::Step: return "step";
  }
  return "";
}

namespace {

// Where one stage's slices go: the estimate's schedule run and the step's frame around it.
struct TimelineFrame {
  const ClusterStepEstimate& e;
  const PipelineRun& run;
  double first, pipelineEnd, syncAfter;  // the first pass's start, the pipeline's end, the sync after it
  bool training, split, pipelined;
  int64_t v;
  double stageDevices;
};

// Stage `stage`'s slices and memory samples: its weight casts and ZeRO gather, each pass of the
// schedule with its ops and transfers, the gradient reduction and the update.
void drawStage(StepTimeline& out, const Graph& graph, const ParallelSettings& settings, int32_t stage,
               std::vector<std::vector<StageOp>>& stageOps, const TimelineFrame& f) {
  const ClusterStepEstimate& e = f.e;
  const PassSeconds& seconds = e.passes;
  const auto& order = f.run.order;
  const auto& starts = f.run.starts;
  const double first = f.first, pipelineEnd = f.pipelineEnd, syncAfter = f.syncAfter, stageDevices = f.stageDevices;
  const bool training = f.training, split = f.split, pipelined = f.pipelined;
  const int64_t v = f.v;
  const ClusterStepEstimate::Stage& st = e.stages[stage];
  StageMemory memory = stageMemory(graph, settings, stage, v);
  out.stagePeakBytes[stage] = memory.peak;
  std::vector<StageOp*> all;
  for (auto& chunk : stageOps)
    for (StageOp& o : chunk) all.push_back(&o);
  placeInWalk(graph, stage, pipelined, memory, all);
  StageLayout layout(out, stage, stageDevices);
  layout.opsBase_ = graph.ops.data();
  if (memory.training) layout.sample(0, memory.training->residentBytes);
  layout.slice(TimelineStream::Compute, TimelinePhase::Step, "weight casts (once a step)", 0, training ? st.weightCasts : 0);
  if (training && e.zeroGather)
    layout.slice(TimelineStream::GradientSync, TimelinePhase::Step, "ZeRO AllGather of the updated weights", e.weightQuantization,
                 st.gradientSync / 2);
  // The chunk passes of each micro-batch in flight: forward begun, backward (zero-bubble: its
  // weight gradient) not done.
  std::vector<int64_t> inFlight(out.microBatches, 0);
  int64_t total = 0;
  for (size_t i = 0; i < order[stage].size(); ++i) {
    const PipelinePass& p = order[stage][i];
    const double start = first + starts[stage][i];
    const double length = seconds.of(p, stage);
    layout.passEnd_ = start + length;
    const size_t before = out.slices.size();
    layout.slice(TimelineStream::Compute, p.forward() ? TimelinePhase::Forward : TimelinePhase::Backward, passName(p, v), start,
                 length, &p);
    if (out.slices.size() > before) out.slices.back().slot = true;
    if (p.forward() && training) ++inFlight[p.microBatch], ++total;
    const int64_t others = total - inFlight[p.microBatch];
    if (p.kind == PassKind::Forward)
      layout.forward(p, start, stageOps[p.chunk], st.sentForward / static_cast<double>(v), memory, others);
    else if (p.kind == PassKind::Backward)
      layout.backward(p, start, stageOps[p.chunk], st.sentBackward / static_cast<double>(v), memory, others, split);
    else layout.weightGradients(p, start, stageOps[p.chunk]);
    if (p.kind == (split ? PassKind::Weight : PassKind::Backward)) --inFlight[p.microBatch], --total;
  }
  if (!training) return;
  // The reduction as the estimate overlaps it: behind the stage's last micro-batch's backward,
  // ending with the pipeline; then the update, once every stage's reduction is done.
  layout.slice(TimelineStream::GradientSync, TimelinePhase::Backward,
               e.zeroGather ? "gradient ReduceScatter" : "gradient AllReduce", pipelineEnd - st.backwardCompute,
               e.zeroGather ? st.gradientSync / 2 : st.gradientSync);
  const double update = pipelineEnd + syncAfter;
  if (memory.training) layout.sample(update, memory.training->stepLiveBytes);
  layout.slice(TimelineStream::Compute, TimelinePhase::Optimizer, "optimizer update", update, st.update);
  if (memory.training) layout.sample(update + st.update, memory.training->residentBytes);
}

}  // namespace

std::optional<StepTimeline> stepTimeline(const Graph& graph, const ParallelSettings& settings) {
  auto estimate = estimateClusterStep(graph, settings);
  if (!estimate) return std::nullopt;
  StepTimeline out;
  out.estimate = *estimate;
  const ClusterStepEstimate& e = out.estimate;
  const int64_t P = std::max<int64_t>(1, settings.pipelineStages), v = std::max<int64_t>(1, settings.virtualStages);
  const bool training = settings.training, pipelined = graph.stageDevices > 0;
  out.stages = P, out.microBatches = std::max<int64_t>(1, settings.microBatches), out.chunks = v, out.training = training;
  const double stageDevices = static_cast<double>(pipelined ? graph.stageDevices : settings.rankCount());

  std::vector<std::vector<std::vector<StageOp>>> ops(P, std::vector<std::vector<StageOp>>(v));
  forEachOpTime(graph, settings, [&](const Op& op, const StepTime& t) {
    auto& chunk = ops[std::clamp<int64_t>(op.stage, 0, P - 1)][std::clamp<int64_t>(op.chunk, 0, v - 1)];
    chunk.push_back({&op, t, training && std::as_const(op).annotation->recompute, weightGradientSeconds(graph, op, t), 0, 0});
  });

  // The schedule as the estimate runs it, each pass its own stage's.
  const PassSeconds& seconds = e.passes;
  const bool split = training && traitsOf(e.schedule).splitsWeightGradient;
  const PipelineRun run = runPipeline(e.schedule, P, out.microBatches, v, training, seconds);

  // Before the first pass: a recipe's weight casts, and ZeRO's AllGather of the weights (what
  // the first forward does not hide).
  const double syncBefore = training ? e.stages[e.syncStage].syncExposedBefore : 0;
  const double first = e.weightQuantization + syncBefore;
  const double pipelineEnd = first + run.span;
  const double syncAfter = training ? e.stages[e.syncStage].syncExposedAfter : 0;
  out.span = pipelineEnd + syncAfter + (training ? e.optimizer : 0);

  out.stagePeakBytes.assign(P, 0);
  const TimelineFrame frame{e, run, first, pipelineEnd, syncAfter, training, split, pipelined, v, stageDevices};
  for (int64_t s = 0; s < P; ++s) drawStage(out, graph, settings, static_cast<int32_t>(s), ops[s], frame);
  auto byPlace = [](const TimelineSlice& a, const TimelineSlice& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.start != b.start ? a.start < b.start : a.slot > b.slot;
  };
  std::stable_sort(out.slices.begin(), out.slices.end(), byPlace);
  std::stable_sort(out.memory.begin(), out.memory.end(), [](const MemorySample& a, const MemorySample& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.time < b.time;
  });
  return out;
}

}  // namespace irc
