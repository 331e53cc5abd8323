#pragma once
// Two layouts of one tensor restated on a common form (spec/parallel-semantics.md §4 steps 0-1):
// a common refinement of both device matrices, and the tensor's dims expanded into sub-dims so
// that each sub-dim holds at most one axis in each layout. Both planners work on this form.
#include <optional>
#include <vector>

#include "ir/tensor_layout.h"

namespace irc {

struct Unified {
  DeviceMatrix mesh;            // the common refinement
  Shape expanded;               // global shape with each dim expanded into sub-dims
  std::vector<int> from, to;    // per sub-dim the axis of `mesh` (or -1) in each layout
  std::vector<int> groupOfDim;  // per original dim, its first sub-dim
};

// nullopt when the device matrices have no common refinement (e.g. [3, 2] and [2, 3]).
std::optional<Unified> unify(const TensorLayout& a, const TensorLayout& b);

// Maps each axis of `mesh` to the run of axes of the refined mesh `sizes` it covers.
std::vector<std::vector<int>> axisRuns(const DeviceMatrix& mesh, const std::vector<int64_t>& sizes);
// A's partial axes on the unified mesh, ascending.
std::vector<int> partialOnUnified(const TensorLayout& a, const std::vector<std::vector<int>>& runs);
// The local shape of `global` when sub-dim d is split by axisPerDim[d].
Shape localOf(const Shape& global, const std::vector<int>& axisPerDim, const DeviceMatrix& mesh);
// Sub-dim -> original dim.
std::vector<int> subDimOwners(const Unified& u);

}  // namespace irc
