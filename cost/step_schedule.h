#pragma once
// A training (or inference) step on a cluster, as it runs (docs/cluster.md): each stage's
// micro-batch — forward, backward (twice the forward's work), the recomputed forward of
// checkpointed ops — with tensor-parallel collectives and redistributions on the critical path;
// the pipeline's 1F1B schedule, (M + P - 1) slots of its slowest stage (interleaved: each
// chunk's slot its slowest stage's, the schedule run through); the data-parallel
// gradient reduction overlapped with the last micro-batch's backward, what does not hide
// exposed; the optimizer's update at HBM bandwidth. With eager dispatch (`cluster.dispatch`)
// each stage's micro-batch is the host issuing its ops and the device running them
// (cost/eager_dispatch.h), and the optimizer's loop is issued op by op too. And what it computes: model FLOPs (forward
// and backward) and hardware FLOPs (with recompute), TFLOP/s per device and MFU.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "plan/parallel_config.h"
#include "plan/pipeline_order.h"

namespace irc {

struct ClusterStepEstimate {
  // The step's seconds, split: they add up to `total`.
  double compute = 0;
  double exposedCommunication = 0;
  double pipelineBubble = 0;
  double optimizer = 0;
  // A low-precision recipe's weight casts, once a step on the slowest-casting stage (0 otherwise).
  double weightQuantization = 0;
  double total = 0;
  // Per step, all devices.
  double modelFlops = 0;  // forward and backward (3x the forward), without recompute
  // The same with every point of the attention products (the causal mask's and windows' skipped
  // points counted: the dense s² count of PaLM's and the pre-2024 Megatron-LM formula).
  double modelFlopsEveryPoint = 0;
  double hardwareFlops = 0;    // with recompute's extra forward
  double tflopsPerDevice = 0;  // hardware FLOPs per second per device, in TFLOP/s (as Megatron-LM reports)
  double mfu = 0;              // model FLOPs per second over the devices' dense matmul peak
  // What the terms are made of.
  int32_t slowestStage = 0;
  double gradientSync = 0;  // the slowest-exposing stage's gradient reduction
  double gradientSyncExposed = 0;
  // The step by what its time is spent on, adding up to `total` (the slowest stage's kernels and
  // exposed communication over the micro-batches, then the step's other terms): `gemm` (products
  // outside attention), `attention` (the scores' and context products and what lies between),
  // `moe_dispatch_combine`, `elementwise_norms_and_copies` (every other kernel), `host_dispatch`
  // (eager: the device waiting on the host), `collectives` (TP, CP, EP and redistribution on the
  // critical path), `pipeline_transfers`, `gradient_sync` (exposed), `pipeline_bubble`,
  // `optimizer`, `weight_quantization`. In this order; zero terms included.
  std::vector<std::pair<std::string, double>> timeByCategory;
  // Each stage's share, as the terms above take it (cost/step_timeline.h lays them
  // out in time): one micro-batch's forward (its kernels, the collectives on its critical path,
  // what its Sends expose) and the rest of it (backward kernels, recomputed forwards, the
  // collectives' duals, the gradients' Sends); its gradient reduction, split under ZeRO into the
  // ReduceScatter after the backward and the AllGather before the next forward, with what each
  // exposes; its update and its weight casts.
  struct Stage {
    double forward = 0, backward = 0;
    double forwardCompute = 0, backwardCompute = 0;  // what a gradient reduction hides behind
    double sentForward = 0, sentBackward = 0;        // the Sends' exposed seconds in each
    double gradientSync = 0;
    double syncExposedAfter = 0;   // the AllReduce's (ZeRO: the ReduceScatter's) exposed seconds
    double syncExposedBefore = 0;  // ZeRO: the AllGather's, before the next step's first forward
    double update = 0, weightCasts = 0;
    // Its passes of each model chunk (virtual stages; one without), forward and the rest,
    // adding up to `forward` and `backward`.
    std::vector<double> chunkForward, chunkBackward;
    std::vector<double> chunkWeight;  // of chunkBackward, the weight gradients (zero-bubble's W)
  };
  std::vector<Stage> stages;
  // Each pass's seconds as the schedule runs it, [stage][chunk]: its stage's chunk's forward and
  // backward (zero-bubble: the input gradient and the weight gradient apart).
  PassSeconds passes;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  bool zeroGather = false;  // the reduction is ZeRO's ReduceScatter and AllGather
  int32_t syncStage = 0;    // the stage whose exposed reduction `gradientSyncExposed` is
};

// Needs a cluster (settings.cluster) and layouts inferred; nullopt otherwise.
std::optional<ClusterStepEstimate> estimateClusterStep(const Graph& graph, const ParallelSettings& settings);

}  // namespace irc
