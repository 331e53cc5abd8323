#pragma once
// The one canonical tensor layout: a device matrix, per tensor dim the device axes splitting it
// (major first), the partial axes with their reduce op, and the tensor's global shape. Every
// notation (strategy, tensor map, alias layout, nd-SBP, placements, dims_mapping) parses into
// this and prints from it (ir/layout_notation.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/device_matrix.h"
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace irc {

struct TensorLayout {
  DeviceMatrix mesh;
  Shape shape;
  DimAxes dims;                  // one entry per tensor dim; axes index `mesh.dims` from the left
  std::vector<int> partialAxes;  // ascending
  ReduceOp partialOp = ReduceOp::Sum;

  static TensorLayout replicated(DeviceMatrix mesh, Shape shape);

  int64_t splitsOfDim(size_t dim) const;  // product of the sizes of the axes on `dim`
  Shape sliceShape() const;
  // The index of the block `deviceRank` holds along each dim (mixed radix over that dim's axes).
  std::vector<int64_t> blockIndex(int64_t deviceRank) const;
  // [begin, end) per dim.
  std::vector<std::pair<int64_t, int64_t>> sliceRanges(int64_t deviceRank) const;
  // Seed 000's 分片号: the row-major index of the rank's block in the grid of blocks.
  int64_t shardNumber(int64_t deviceRank) const;
  // The ranks that hold exactly the same data (same block, same partial piece), ascending.
  std::vector<int64_t> replicaGroup(int64_t deviceRank) const;
  // Axes used by the tensor map, in ascending order.
  std::vector<int> usedAxes() const;
  bool isPartial() const { return !partialAxes.empty(); }

  // MindSpore's integer tensor map, counted from the right (-1 = not split); only for layouts
  // with at most one axis per dim. `tensorMapEntries` handles several axes per dim.
  std::vector<std::vector<int>> tensorMapEntries() const;  // per dim: from-right indices, major first
  std::vector<int> partialFromRight() const;

  // Size-1 device axes removed and the rest renumbered; layouts are compared in this form.
  TensorLayout standardForm() const;
  // The standard form with every two adjacent axes that play one role merged: both unused, both
  // partial, or one right after the other on the same dim. A mesh refined (an axis of 128 split
  // 8 x 16 where a reshape needs it, MindSpore's device-arrangement expansion) gives the same
  // coarsest form, so two layouts hold the same data on every rank exactly when these are equal.
  TensorLayout coarsestForm() const;
  // Equality in standard form, or, where the meshes differ, in coarsest form.
  bool sameAs(const TensorLayout& other) const;
  bool operator==(const TensorLayout&) const = default;
};

// A problem with a layout, for located diagnostics: what is wrong and, where a dim is at fault,
// which dim.
struct LayoutProblem {
  std::string message;
  int dim = -1;
};

// Checks: axes in range, no axis used twice (map or partial), every split divides its dim.
// `tensorName` names the tensor in messages.
std::optional<LayoutProblem> validateLayout(const TensorLayout& layout, std::string_view tensorName);

// The bytes of one rank's slice of a tensor of `dtype` in `layout`.
double sliceBytes(const TensorLayout& layout, DType dtype);

// "1, 2, 4, 8" — the split counts that divide `size` (for "valid:" lists).
std::string divisorsText(int64_t size);
// True when a dim of `size` splits into `ways` equal blocks. An empty dim (size 0) is not split:
// its blocks would be empty too, and layouts of sub-dims need sizes that multiply to the dim.
inline bool splitsEvenly(int64_t size, int64_t ways) { return ways == 1 || (ways > 1 && size > 0 && size % ways == 0); }

}  // namespace irc
