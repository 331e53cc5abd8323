#include "cost/step_schedule.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <tuple>

#include "ops/op_defs.h"
#include "cost/attention_fusion.h"
#include "cost/collective_time.h"
#include "cost/eager_dispatch.h"
#include "cost/kernel_time.h"
#include "plan/pipeline_order.h"
#include "cost/routed_share.h"
#include "cost/step_cost.h"
#include "plan/device_precision.h"

namespace irc {
namespace {

// One stage's micro-batch.
struct StageWork {
  double compute = 0;               // forward, backward, recomputed forward
  double communication = 0;         // collectives and redistributions on the critical path, transfers
  double backwardCompute = 0;       // what a gradient reduction can hide behind (one micro-batch)
  double forwardCompute = 0;        // what ZeRO's weight gather can hide behind (the next step's first forward)
  double forwardCommunication = 0;  // the forward's part of `communication`
  // The stage's gradient bytes by the group they are reduced over ((ranks, nodes) -> bytes,
  // element bytes): reduced once per step, in buckets.
  std::map<std::tuple<int64_t, int64_t, double>, double> gradientBytes;
  double gradientSync = 0;     // their seconds
  double trainedElements = 0;  // parameter elements a rank of the stage updates
  double weightCasts = 0;      // a low-precision recipe's weight casts, once a step
  // Eager dispatch: each op's host and device seconds, forward and backward, in forward order;
  // and the parameter tensors the optimizer's loop visits.
  struct EagerOp {
    double hostForward, deviceForward, hostBackward, deviceBackward;
  };
  std::vector<EagerOp> eagerOps;
  int64_t parameters = 0;
  // The kernels' seconds by kind (ClusterStepEstimate::timeByCategory's first four), and the
  // Send/Receive part of `communication`.
  std::array<double, 4> kernels{};
  double transfers = 0;
  double sentForward = 0, sentBackward = 0;  // `transfers` by the phase whose Sends they are
  // Per model chunk: its ops' forward and the rest of their micro-batch (virtual stages), and
  // of that rest the weight gradients (zero-bubble's W).
  std::vector<double> chunkForward, chunkBackward, chunkWeight;
  double seconds() const { return compute + communication; }
};

enum KernelKind { kGemm, kAttention, kMoe, kOther };

KernelKind kernelKind(const Op& op, const std::vector<bool>& attention) {
  if (!op.inserted() && familyOf(op) == OpFamily::MoeRouting) return kMoe;
  for (ValueId v : op.results)
    if (v < static_cast<ValueId>(attention.size()) && attention[v]) return kAttention;
  for (const Operand& o : op.operands)
    if (o.isValue() && o.value < static_cast<ValueId>(attention.size()) && attention[o.value]) return kAttention;
  if (!op.inserted() && op.parallel->rule && isProduct(*op.parallel->rule)) return kGemm;
  return kOther;
}

// The step's FLOPs: the model's (routed tokens only, causal attention), at every point of the
// scores, and the hardware's extra (capacity padding, recomputed forwards), one micro-batch's.
struct StepFlops {
  double forward = 0, padding = 0, recompute = 0, everyPoint = 0;
};

// Each stage's micro-batch: its ops' kernels and collectives by phase, chunk and kind, its
// gradients and trained elements; eager, the host's stream of issues.
StepFlops addOpWork(const Graph& graph, const ParallelSettings& settings, std::vector<StageWork>& work) {
  const ClusterDescription& c = *settings.cluster;
  const int64_t stages = static_cast<int64_t>(work.size());
  const int64_t chunks = std::max<int64_t>(1, settings.virtualStages);
  const bool training = settings.training;
  StepFlops flops;
  // Model FLOPs: the routed tokens' share of the experts' slots (padding is hardware FLOPs only).
  const std::vector<double> routed = routedShares(graph);
  const bool eager = c.dispatch == Dispatch::Eager;
  std::optional<EagerDispatchCounter> dispatches;
  if (eager) dispatches.emplace(graph, settings);
  // Attention's chains (found whether or not the stack fuses them), for the time by category.
  const std::vector<bool> attention = fusedAttentionValues(graph);
  forEachOpTime(graph, settings, [&](const Op& op, const StepTime& t) {
    StageWork& w = work[std::clamp<int64_t>(op.stage, 0, stages - 1)];
    bool again = training && std::as_const(op).annotation->recompute;
    if (eager) {
      // A recomputed op is issued again before its backward.
      OpDispatches d = dispatches->next(op);
      w.eagerOps.push_back({d.forward * c.hostOpSeconds, t.compute, (d.backward + (again ? d.forward : 0)) * c.hostOpSeconds,
                            t.backwardCompute + (again ? t.compute : 0)});
      w.parameters += d.parameters;
    }
    double comm = t.forwardComm + t.redistribution;
    // Backward: its kernels (twice the forward's compute but under a low-precision recipe), and
    // each forward collective's dual.
    w.compute += t.compute + (training ? t.backwardCompute : 0) + (again ? t.compute : 0);
    w.kernels[kernelKind(op, attention)] += t.compute + (training ? t.backwardCompute : 0) + (again ? t.compute : 0);
    w.communication += comm * (training ? 2 : 1) + (again ? comm : 0);
    w.forwardCommunication += comm;
    const int64_t chunk = std::clamp<int64_t>(op.chunk, 0, chunks - 1);
    w.chunkForward[chunk] += t.compute + comm;
    if (training) w.chunkBackward[chunk] += t.backwardCompute + comm + (again ? t.compute + comm : 0);
    if (training) w.chunkWeight[chunk] += weightGradientSeconds(graph, op, t);
    if (training) w.backwardCompute += t.backwardCompute + (again ? t.compute : 0);
    w.forwardCompute += t.compute;
    if (training) w.weightCasts += t.perStepCompute;
    for (const GradientShare& g : t.gradients) w.gradientBytes[{g.span.ranks, g.span.nodes, g.elementBytes}] += g.bytes;
    w.trainedElements += t.trainedElements;
    const double share = routed[&op - graph.ops.data()];
    flops.forward += share * t.globalFlops;
    flops.padding += (1 - share) * t.globalFlops;
    flops.everyPoint += share * t.everyPointFlops;
    if (again) flops.recompute += t.globalFlops;
  });
  // Eager dispatch: the host issues each micro-batch's forward, then its backward in reverse,
  // and the device runs each kernel once issued: the stream's time replaces the kernels' sum.
  if (eager)
    for (StageWork& w : work) {
      EagerStream stream;
      for (const auto& op : w.eagerOps) stream.issue(op.hostForward, op.deviceForward);
      w.forwardCompute = stream.finish();
      if (training)
        for (auto op = w.eagerOps.rbegin(); op != w.eagerOps.rend(); ++op) stream.issue(op->hostBackward, op->deviceBackward);
      w.backwardCompute = stream.finish() - w.forwardCompute;
      w.compute = stream.finish();
    }
  return flops;
}

// The Send/Receive pairs' exposed seconds on their stages, and each stage's gradient reduction.
void addTransfersAndGradientSync(const Graph& graph, const ParallelSettings& settings, std::vector<StageWork>& work) {
  const ClusterDescription& c = *settings.cluster;
  const int64_t stages = static_cast<int64_t>(work.size());
  const int64_t chunks = std::max<int64_t>(1, settings.virtualStages);
  const bool training = settings.training;
  // Send/Receive at stage boundaries: each micro-batch's activation forward and, in training,
  // its gradient back, on the sending stage's critical path; with virtual stages, what the
  // stage's next chunk (a v-th of its forward, or of its backward) does not hide.
  int64_t stageDevices = graph.stageDevices > 0 ? graph.stageDevices : settings.deviceNum;
  for (const PipelineTransfer& transfer : graph.transfers) {
    // (From the last stage back to the first with virtual stages.)
    GroupSpan span = pairSpan(stageDevices * std::abs(transfer.toStage - transfer.fromStage), c.domainDevices());
    DType dtype = graph.value(transfer.value).type.dtype;
    double bytes = transfer.bytesPerRank / byteSize(dtype) * byteSize(computeDType(dtype, settings.precision));
    double seconds = collectiveSeconds(CollectiveKind::PointToPoint, bytes, span, c);
    StageWork& sender = work[std::clamp<int64_t>(transfer.fromStage, 0, stages - 1)];
    const double sent = exposedTransferSeconds(seconds, sender.forwardCompute / static_cast<double>(chunks), chunks);
    sender.communication += sent, sender.transfers += sent, sender.sentForward += sent;
    if (!training) continue;
    StageWork& receiver = work[std::clamp<int64_t>(transfer.toStage, 0, stages - 1)];
    const double received = exposedTransferSeconds(seconds, receiver.backwardCompute / static_cast<double>(chunks), chunks);
    receiver.communication += received, receiver.transfers += received, receiver.sentBackward += received;
  }
  for (StageWork& w : work)
    for (const auto& [group, bytes] : w.gradientBytes) {
      auto [ranks, nodes, elementBytes] = group;
      w.gradientSync += gradientReductionSeconds(bytes, elementBytes, GroupSpan{ranks, nodes}, c);
    }
}

// Each stage's forward and backward of one micro-batch, by chunk, and the slowest stage.
void describeStages(ClusterStepEstimate& e, const std::vector<StageWork>& work, int64_t chunks) {
  const int64_t stages = static_cast<int64_t>(work.size());
  e.stages.resize(stages);
  for (int64_t s = 0; s < stages; ++s) {
    const StageWork& w = work[s];
    if (w.seconds() > work[e.slowestStage].seconds()) e.slowestStage = static_cast<int32_t>(s);
    ClusterStepEstimate::Stage& out = e.stages[s];
    out.forward = w.forwardCompute + w.forwardCommunication + w.sentForward;
    out.backward = w.seconds() - out.forward;
    out.forwardCompute = w.forwardCompute, out.backwardCompute = w.backwardCompute;
    out.sentForward = w.sentForward, out.sentBackward = w.sentBackward;
    out.gradientSync = w.gradientSync;
    // Its chunks' passes, adding up to its forward and the rest (eager: the stream's time, shared
    // by the chunks' kernels).
    auto share = [&](const std::vector<double>& own, double total, double sent) {
      double sum = 0;
      for (double x : own) sum += x;
      std::vector<double> pass(chunks, (total - sent) / static_cast<double>(chunks));
      for (int64_t k = 0; k < chunks && sum > 0; ++k) pass[k] = own[k] * (total - sent) / sum;
      for (double& x : pass) x += sent / static_cast<double>(chunks);
      return pass;
    };
    out.chunkForward = share(w.chunkForward, out.forward, w.sentForward);
    out.chunkBackward = share(w.chunkBackward, out.backward, w.sentBackward);
    out.chunkWeight = w.chunkWeight;
    for (int64_t k = 0; k < chunks; ++k) out.chunkWeight[k] = std::min(out.chunkWeight[k], out.chunkBackward[k]);
  }
}

// The schedule's passes per stage and chunk, and the bubble its run leaves over the slowest stage.
void addPipelineBubble(ClusterStepEstimate& e, const ParallelSettings& settings, const StageWork& slowest, int64_t chunks) {
  const int64_t stages = static_cast<int64_t>(e.stages.size());
  const double micro = static_cast<double>(std::max<int64_t>(1, settings.microBatches));
  const bool training = settings.training;
  // The schedule run through (plan/pipeline_order.h) with every pass its own
  // stage's: a stage starts a pass when it is free and the pass's input has arrived, so a light
  // stage waits on a heavy one and the heavy chunks (the first's embedding, the last's head and
  // loss) lengthen the warm-up and drain. Zero-bubble: the backward's weight gradients are passes
  // of their own. The bubble is the span over the slowest stage's work, which it runs back to
  // back: 1F1B's (P - 1) stage slots (Narayanan et al. 2021, §2.2.2) where the stages are even,
  // the interleaved schedule's (P - 1) chunk slots, zero-bubble's weight gradients filling what
  // 1F1B leaves idle.
  const bool split = training && traitsOf(e.schedule).splitsWeightGradient;
  const std::vector<std::vector<double>> table(stages, std::vector<double>(chunks, 0));
  e.passes = PassSeconds{table, table, table};
  for (int64_t s = 0; s < stages; ++s) {
    const ClusterStepEstimate::Stage& st = e.stages[s];
    for (int64_t k = 0; k < chunks; ++k) {
      const double weight = split ? st.chunkWeight[k] : 0;
      e.passes.forward[s][k] = st.chunkForward[k];
      e.passes.backward[s][k] = st.chunkBackward[k] - weight;
      e.passes.weight[s][k] = weight;
    }
  }
  if (stages > 1) {
    const PipelineRun run = runPipeline(e.schedule, stages, settings.microBatches, chunks, training, e.passes);
    e.pipelineBubble = std::max(0.0, run.span - micro * slowest.seconds());
  }
}

// Training: the gradients' reduction each stage cannot hide, the optimizer's update, the weight casts.
void addGradientSyncAndUpdate(ClusterStepEstimate& e, const ParallelSettings& settings, const std::vector<StageWork>& work) {
  const ClusterDescription& c = *settings.cluster;
  const int64_t stages = static_cast<int64_t>(work.size());
  const bool eager = c.dispatch == Dispatch::Eager;
  {
    // Each stage reduces its gradients as its last micro-batch's backward makes them (Megatron's
    // and FSDP's overlap): what the backward cannot hide is exposed; the worst stage decides.
    // With ZeRO the reduction is a ReduceScatter (each rank keeps its shard's sum) and, after the
    // update, an AllGather of the updated weights, each moving half of what the AllReduce does
    // (ring: (n - 1)/n of the bytes each): the ReduceScatter hides behind the last backward, the
    // AllGather behind the next step's first forward (Megatron's distributed optimizer with
    // --overlap-grad-reduce and --overlap-param-gather; FSDP's prefetch).
    const bool zero = settings.zeroStage > 0 && settings.parallelOptimizerLevel == 0;
    e.zeroGather = zero;
    for (int64_t s = 0; s < stages; ++s) {
      const StageWork& w = work[s];
      ClusterStepEstimate::Stage& out = e.stages[s];
      out.syncExposedAfter = std::max(0.0, (zero ? w.gradientSync / 2 : w.gradientSync) - w.backwardCompute);
      out.syncExposedBefore = zero ? std::max(0.0, w.gradientSync / 2 - w.forwardCompute) : 0;
      double exposed = out.syncExposedAfter + out.syncExposedBefore;
      if (exposed >= e.gradientSyncExposed) {
        e.gradientSyncExposed = exposed;
        e.gradientSync = w.gradientSync;
        e.syncStage = static_cast<int32_t>(s);
      }
      double update = w.trainedElements * optimizerUpdateBytesPerElement(settings.optimizer, settings.precision) /
                      (c.device.hbmBandwidth * c.memoryEfficiency);
      // Eager, the host issues the update's ops too; the device waits for the slower.
      if (eager) update = std::max(update, optimizerDispatches(settings, w.parameters) * c.hostOpSeconds);
      out.update = update, out.weightCasts = w.weightCasts;
      e.optimizer = std::max(e.optimizer, update);
      e.weightQuantization = std::max(e.weightQuantization, w.weightCasts);
    }
    e.exposedCommunication += e.gradientSyncExposed;
  }
}

// The step's time by category and its FLOPs, a device's TFLOP/s and MFU.
void addCategoriesAndFlops(ClusterStepEstimate& e, const ParallelSettings& settings, const StageWork& slowest,
                           const StepFlops& flops) {
  const ClusterDescription& c = *settings.cluster;
  const double micro = static_cast<double>(std::max<int64_t>(1, settings.microBatches));
  const bool training = settings.training;
  // Eager, the stream's time is the kernels' and the waits on the host between them.
  double kernels = 0;
  for (double k : slowest.kernels) kernels += k;
  e.timeByCategory = {{"gemm", micro * slowest.kernels[kGemm]},
                      {"attention", micro * slowest.kernels[kAttention]},
                      {"moe_dispatch_combine", micro * slowest.kernels[kMoe]},
                      {"elementwise_norms_and_copies", micro * slowest.kernels[kOther]},
                      {"host_dispatch", micro * std::max(0.0, slowest.compute - kernels)},
                      {"collectives", micro * (slowest.communication - slowest.transfers)},
                      {"pipeline_transfers", micro * slowest.transfers},
                      {"gradient_sync", e.gradientSyncExposed},
                      {"pipeline_bubble", e.pipelineBubble},
                      {"optimizer", e.optimizer},
                      {"weight_quantization", e.weightQuantization}};
  e.modelFlops = micro * flops.forward * (training ? 3 : 1);
  e.modelFlopsEveryPoint = micro * flops.everyPoint * (training ? 3 : 1);
  e.hardwareFlops = e.modelFlops + micro * (flops.padding * (training ? 3 : 1) + flops.recompute);
  double devices = static_cast<double>(settings.rankCount());
  if (e.total > 0) {
    e.tflopsPerDevice = e.hardwareFlops / e.total / devices / 1e12;
    e.mfu = e.modelFlops / e.total / devices / matmulPeak(c, settings.precision);
  }
}

}  // namespace

std::optional<ClusterStepEstimate> estimateClusterStep(const Graph& graph, const ParallelSettings& settings) {
  if (!settings.cluster) return std::nullopt;
  const int64_t stages = std::max<int64_t>(1, settings.pipelineStages);
  const double micro = static_cast<double>(std::max<int64_t>(1, settings.microBatches));
  const int64_t chunks = std::max<int64_t>(1, settings.virtualStages);
  std::vector<StageWork> work(stages);
  for (StageWork& w : work) w.chunkForward.assign(chunks, 0), w.chunkBackward.assign(chunks, 0), w.chunkWeight.assign(chunks, 0);
  const StepFlops flops = addOpWork(graph, settings, work);
  addTransfersAndGradientSync(graph, settings, work);
  ClusterStepEstimate e;
  e.schedule = settings.schedule();
  describeStages(e, work, chunks);
  const StageWork& slowest = work[e.slowestStage];
  e.compute = micro * slowest.compute;
  e.exposedCommunication = micro * slowest.communication;
  addPipelineBubble(e, settings, slowest, chunks);
  if (settings.training) addGradientSyncAndUpdate(e, settings, work);
  e.total = e.compute + e.exposedCommunication + e.pipelineBubble + e.optimizer + e.weightQuantization;
  addCategoriesAndFlops(e, settings, slowest, flops);
  return e;
}

}  // namespace irc
