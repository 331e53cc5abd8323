#pragma once
// `--redistribution optimal` (irc's own planner): a shortest-path search over every plan made of
// MindSpore's primitives (StridedSlice, AllGather [+ Split/Concat], AllReduce) plus AlltoAll and
// ReduceScatter, on the same unified form as the MindSpore planner, minimising an alpha-beta time
// model. MindSpore's plan is one of the paths searched, so the result is never costlier under the
// model; a partial source is usually finished by a ReduceScatter (AllReduce + slice fused).
#include <functional>

#include "plan/parallel_config.h"
#include "plan/redistribution_planner.h"

namespace irc {

// Time of a step in seconds (ring algorithms; n = group size, B = bytes of the local input):
//   AllGather      (n-1)·alpha + (n-1)·B·beta           (+ 2·n·B·gamma for Split/Concat off dim 0)
//   AllReduce    2·(n-1)·alpha + 2·(n-1)/n·B·beta + B·gamma
//   ReduceScatter  (n-1)·alpha + (n-1)/n·B·beta   + B·gamma
//   AlltoAll       (n-1)·alpha + (n-1)/n·B·beta
//   StridedSlice   B/n·gamma (the slice is copied)   Reshape  B·gamma
// The model's figures are CostModel's (plan/parallel_config.h): `parallel.cost_model`, or
// `irc --alpha S --beta S --gamma S`.
// A ring AllReduce of `bytes` per rank over `n` ranks (0 for one rank).
double allReduceTime(double bytes, double n, const CostModel& model);
double stepTime(const RedistStep& step, int dtypeBytes, const CostModel& model);
double planTime(const RedistPlan& plan, int dtypeBytes, const CostModel& model);

RedistPlan planOptimal(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options, const CostModel& model);
// The same under any timing of a step (a cluster's: cost/step_cost.h's stepTimerFor).
using StepTimer = std::function<double(const RedistStep&, int dtypeBytes)>;
RedistPlan planOptimal(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options, const StepTimer& timer);

}  // namespace irc
