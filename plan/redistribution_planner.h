#pragma once
// Redistribution of one tensor from layout A to layout B (spec/parallel-semantics.md §4),
// MindSpore's operator inference on plain values, unit-tested without any graph:
//   1. unify the two device matrices into a common refinement and expand the tensor's dims so
//      each (sub-)dim holds at most one axis in each layout (MindSpore's ExpandTensorShape);
//   2. repeat split / permute / concat passes over the dims in ascending order until the
//      current map equals the target's;
//   3. wrap in Reshapes to and from the expanded local shape when the expansion changed it.
// Where no common refinement exists the tensor is gathered whole, reshaped and split.
#include <optional>
#include <string>
#include <vector>

#include "ir/redist_step.h"
#include "ir/tensor_layout.h"

namespace irc {

struct RedistPlan {
  std::vector<RedistStep> steps;
  RedistCost cost;
  bool empty() const { return steps.empty(); }
};

struct PlannerOptions {
  bool enableAlltoall = false;
  int dtypeBytes = 4;
};

// A and B describe the same global tensor (same shape). A may be partial: its reduction comes
// first (AllReduce over the partial axes).
RedistPlan planRedistribution(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options);

// The correction of a comm total of MindSpore's per-step costs (ops/collective.h: stepCost).
double correctComm(double comm);

}  // namespace irc
