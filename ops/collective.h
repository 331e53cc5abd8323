#pragma once
// The collectives, one home: which op family and which redistribution step is which collective,
// the names MindSpore prints for them, and the bytes they move under the ring algorithm (NCCL's
// accounting, ../shared/hardware.md). The ring formula is written here once; the cost models
// (plan/optimal_planner.h, plan/redistribution_planner.h, cost/step_cost.h), the cluster's
// collective time (cost/collective_time.h), the report and `irc diff` take it from here.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/cost_model.h"
#include "ir/redist_step.h"
#include "ir/tensor_layout.h"
#include "ops/op_defs.h"

namespace irc {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AlltoAll, PointToPoint };

// The group collectives, in the order summaries list them.
inline constexpr CollectiveKind kGroupCollectives[] = {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                                                       CollectiveKind::ReduceScatter, CollectiveKind::AlltoAll};

// MindSpore's primitive name ("AllReduce", ...; "Send" for a point-to-point transfer).
std::string_view collectiveName(CollectiveKind kind);
// The collective an op type names, as a dump prints it (AllReduce, AllGather, ReduceScatter,
// AlltoAll, Send); nullopt for every other type.
std::optional<CollectiveKind> collectiveOfType(std::string_view type);
// The collective an op family is; nullopt for the others.
std::optional<CollectiveKind> collectiveOfFamily(OpFamily family);
// The collective a redistribution step runs (a Gather step's AllGather, a Send's transfer);
// nullopt for local steps, a Receive (its Send counts) and a mirror (identity forward; its
// gradient's collective is mirrorGradientBytes').
std::optional<CollectiveKind> collectiveOf(const RedistStep& step);

// Bytes each of `n` ranks sends per byte it holds on entry, under the ring algorithm:
// AllReduce 2 (n - 1) / n, AllGather n - 1 (of its part), ReduceScatter and AlltoAll (n - 1) / n
// (of its whole buffer); a point-to-point transfer sends what it holds.
double ringTraffic(CollectiveKind kind, double n);
// The ring's sequential steps (each paying one link latency): 2 (n - 1) for an AllReduce, n - 1
// for the others, 1 for a transfer.
double ringSteps(CollectiveKind kind, double n);

// Times a group collective crosses its ring end to end, each paying the group's latency once:
// 2 for an AllReduce (a reduce-scatter, then an all-gather), 1 for the others.
double ringPasses(CollectiveKind kind);

// A collective's seconds under the alpha-beta-gamma model (`parallel.cost_model`): a link latency
// per ring step, `bytes` (each rank's local input) times its ring traffic at beta a byte, and for
// a reduction (AllReduce, ReduceScatter) its arithmetic at gamma a byte. Copies around it (the
// Split/Concat of a collective off dim 0) are the caller's.
double alphaBetaSeconds(CollectiveKind kind, double n, double bytes, const CostModel& model);

// MindSpore's per-step cost (spec/parallel-semantics.md §4): bytes communicated and computed
// per rank, from the local shape entering the step.
RedistCost stepCost(const RedistStep& step, int dtypeBytes);
// Bytes a local step (a slice, a reshape, a RealDiv, a vocabulary offset) reads once and writes
// once, from the `bytes` entering it; nullopt for a collective and for a step that runs nothing
// (a mirror's identity forward, a Receive whose Send counts).
std::optional<double> localStepCopyBytes(const RedistStep& step, double bytes);
// Bytes copied around a collective off dim 0 (the Split + Concat that follow an AllGather, the
// Split + Concat stacking a ReduceScatter's blocks on dim 0 before it); nullopt for the others.
std::optional<double> offDim0CopyBytes(const RedistStep& step, double bytes);
// What a step does to a tensor map as the planners search it: `map` holds per sub-dim the axis
// splitting it (-1: whole) and `partial` a bit per axis still partial; `axes` is the step's axes
// as a bit mask (the first one splits).
void applyStepToMap(RedistStep::Kind kind, int dim, int concatDim, uint32_t axes, std::vector<int>& map, uint32_t& partial);

// Bytes a rank sends for the step (0 for local steps, a Receive and a mirror's forward).
double stepSendBytes(const RedistStep& step, int dtypeBytes);
// The collective of a mirror's gradient: an AllReduce of its slice, or a ReduceScatter under
// optimizer parallel; and the bytes a rank sends for it.
CollectiveKind mirrorGradientCollective(const RedistStep& step);
double mirrorGradientBytes(const RedistStep& step, int dtypeBytes);

// What a step is, for the passes and dumps that branch on it: its kind is compared here and in
// the planners, nowhere else.
bool isMirror(const RedistStep& step);          // a training graph's _MirrorOperator
bool isMeanDivision(const RedistStep& step);    // the RealDiv after a ReduceMean's AllReduce
bool completesPartial(const RedistStep& step);  // the AllReduce summing a partial result over its axes
bool isLocalReshape(const RedistStep& step);
bool isSend(const RedistStep& step);     // a pipeline stage's Send of a value another stage reads
bool isReceive(const RedistStep& step);  // its Receive, in the reading stage

// What is wrong with the local shapes a step says it turns one into the other ("" when nothing):
// a Split divides its dim by the group, an AllGather multiplies it, an AlltoAll does both on its
// two dims, a ReduceScatter divides its dim (dim 0 when it names none), a Reshape keeps the
// element count and every other step the shape.
std::string stepShapeProblem(const RedistStep& step);

// The steps made outside the planners. The mirror of a parameter as an op reads it (`as`): the
// axes of its mesh (above 1) that split no dim, its replica group (a group of one: no mirror).
RedistStep mirrorStep(const TensorLayout& as);
// The AllReduce completing a result partial over `axes` of `mesh`, from its local shape.
RedistStep completionStep(const DeviceMatrix& mesh, std::vector<int> axes, Shape localBefore);
// The pipeline split's Send and Receive of a value between stages `from` and `to` of `stages`
// over `deviceNum` ranks a stage, its slice `local` of `global` (unchanged by the transfer), with
// the tag that pairs them.
struct TransferSteps {
  RedistStep send, receive;
};
TransferSteps transferSteps(int64_t stages, int64_t deviceNum, int64_t from, int64_t to, const Shape& local, const Shape& global,
                            int64_t tag);
// An AllReduce followed by a Split over the same group, rank by rank (the Split's mesh may be
// the unified one of a constraint), as one ReduceScatter entering at `localBefore` (MindSpore's
// reduce-scattered output, DTensor's Partial -> Shard); nullopt when the two do not fuse.
std::optional<RedistStep> fuseReduceThenSlice(const RedistStep& reduce, const RedistStep& slice, const Shape& localBefore);
// The local shape a forward op leaves: a ReduceScatter's dim 0 split over its group, else as it
// entered.
Shape forwardStepLocalAfter(const RedistStep& step, Shape localBefore);

}  // namespace irc
