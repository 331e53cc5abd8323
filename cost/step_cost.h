#pragma once
// The estimated time of one step of a plan (docs/search.md): what search_mode auto minimises,
// and what the report's totals.estimated_step_seconds gives for a compile in any mode, so that
// plans can be compared. The search and the estimate of a compiled graph share these pieces.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/redist_step.h"
#include "ops/op_rule.h"
#include "ops/op_sharding.h"
#include "cost/collective_time.h"
#include "plan/optimal_planner.h"

namespace irc {

// On a cluster, a rank's gradient bytes of one parameter slice, reduced over its replicas: the
// schedule buckets a stage's shares by group (cost/step_schedule.h).
struct GradientShare {
  GroupSpan span;
  double bytes = 0;
  double elementBytes = 0;
};

// An op's own share: its compute on its slice, the forward ops completing its results, and in
// training the gradient AllReduce of the parameters it is the first to read (`gradientSync`: each
// parameter's alone; `gradients`: what they are, for bucketing).
struct OpTime {
  double compute = 0;
  // In training, its backward's kernels: twice the forward's, and under a low-precision recipe a
  // linear layer's two GEMMs with its gradient's casts (docs/cluster.md, "Precision recipes").
  double backwardCompute = 0;
  // Once a step, whatever the micro-batches: a linear layer's weight cast to the recipe's format
  // (Transformer Engine casts at the step's first micro-batch and keeps the copy).
  double perStepCompute = 0;
  double forwardComm = 0;
  double gradientSync = 0;
  std::vector<GradientShare> gradients;
  double globalFlops = 0;      // the op's FLOPs on its whole shapes (every rank's share together)
  double everyPointFlops = 0;  // those with every point of an attention product (no mask skipped)
  double trainedElements = 0;  // elements of the parameter slices whose gradient it syncs
  bool memoryBound = false;    // on a cluster: its kernel's bytes take longer than its FLOPs
};

// The terms of a step's estimate, in seconds. In training the backward computes twice the
// forward's FLOPs and runs each forward collective's dual (AllGather <-> ReduceScatter, an
// AllReduce completing a partial result <-> the identity whose gradient is all-reduced, as
// Megatron's f and g): the same time again.
struct StepTime {
  double compute = 0;
  double backwardCompute = 0;  // the backward's kernels (OpTime)
  double perStepCompute = 0;
  double forwardComm = 0;
  double redistribution = 0;
  double backward = 0;
  double gradientSync = 0;
  std::vector<GradientShare> gradients;  // on a cluster, in training
  double globalFlops = 0;                // the forward's FLOPs on whole shapes
  double everyPointFlops = 0;            // with every point of its attention products
  double trainedElements = 0;            // parameter elements a rank updates
  bool memoryBound = false;              // one op's: its kernel's (OpTime)
  double total() const { return compute + forwardComm + redistribution + backward + gradientSync; }
};

// A product: a factor contracted between two of the op's operands (MatMul, BatchMatMul, Einsum,
// Conv): 2 FLOPs a point, and a kernel on the tensor cores.
bool isProduct(const OpRule& rule);

// FLOPs and bytes of one op on its slice: 2 FLOPs per point of its iteration space where a
// factor is contracted between two operands (MatMul, BatchMatMul, Einsum, Conv), one per point
// otherwise (a factor reduced within one operand, as a lookup's vocabulary, does not count);
// bytes are the local operands and results. Time is the slower of FLOPs over peak and bytes
// over bandwidth.
double computeTime(const OpRule& rule, const OpSharding& s, const OpView& view, DType dtype, const CostModel& model);

// `firstReader`: per tensor operand, whether it is a floating parameter this op is the first to
// read (its gradient's AllReduce over the ranks holding the same slice is the op's).
// What the graph around an op says of its kernel on a cluster: a view launches none (a Reshape
// sharing its operand's memory); tensors a fused attention kernel keeps on chip cost no HBM
// traffic (per tensor operand and result; empty: none).
struct OnChip {
  std::vector<bool> operands, results;
  bool operand(size_t i) const { return i < operands.size() && operands[i]; }
  bool result(size_t i) const { return i < results.size() && results[i]; }
};
struct KernelContext {
  bool isView = false;
  OnChip onChip;
  // A linear layer's product (cost/linear_layers.h): its weight operand; -1 otherwise.
  // Whether the precision recipe runs it in FP8 or FP4.
  int linearWeight = -1;
  bool lowPrecision = false;
  // Whether its activation still needs its cast: an activation several such products read (a
  // layer's q, k and v projections, gate and up) is cast once, as the fused projection casts it.
  bool castActivation = true;
};

// With a cluster (settings.cluster), the op is timed on it (docs/cluster.md).
OpTime opTime(const OpRule& rule, const OpSharding& s, const OpView& view, DType dtype, const std::vector<bool>& firstReader,
              const ParallelSettings& settings, const KernelContext& context = {});

// A redistribution's time under the configured planner (MindSpore's or the optimal one), timed
// by the alpha-beta model.
// `movedBytes`: an element's bytes on the links where they are not the compute dtype's (a
// recipe's quantized dispatch); 0: the compute dtype's.
double redistributionTime(const TensorLayout& from, const TensorLayout& to, DType dtype, const ParallelSettings& settings,
                          double movedBytes = 0);

// One inserted step's time on the settings' cluster and the link its group crosses (irc explain);
// nullopt without a cluster.
struct StepOnCluster {
  double seconds = 0;
  std::string link;
};
std::optional<StepOnCluster> stepOnCluster(const RedistStep& step, DType dtype, const ParallelSettings& settings);

// How the settings time a redistribution step: the cluster's links and HBM, or the flat cost
// model; and the plan the settings' planner makes with it (the optimal planner minimises it).
StepTimer stepTimerFor(const ParallelSettings& settings);
RedistPlan planWithSettings(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options,
                            const ParallelSettings& settings);

// Adds an op's or an edge's time to the terms (training doubling what the backward repeats).
void addOpTime(StepTime& t, const OpTime& op, bool training);
void addRedistributionTime(StepTime& t, double seconds, bool training);

// The estimate of a compiled graph (after layout inference): every model op's time and every
// model edge's redistribution, from the layouts the passes chose.
StepTime estimateStepTime(const Graph& graph, const ParallelSettings& settings);
// Each model op with its own terms and its input edges', in execution order.
void forEachOpTime(const Graph& graph, const ParallelSettings& settings,
                   const std::function<void(const Op&, const StepTime&)>& take);
// The part of a model op's backward kernels that is its weight's gradient (zero-bubble's W):
// half of a product's backward where an operand is a trained weight (its input gradient and its
// weight gradient are one GEMM each of the forward's FLOPs); nothing for other ops, whose
// parameters' gradients (a norm's scale, a bias) are reductions inside their input gradient.
double weightGradientSeconds(const Graph& graph, const Op& op, const StepTime& t);
// The same, per model op (by OpId; 0 for inserted ops): its own time and its input edges'.
std::vector<double> opStepSeconds(const Graph& graph, const ParallelSettings& settings);

}  // namespace irc
