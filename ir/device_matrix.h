#pragma once
// A device matrix (mesh): ranks arranged row-major over its axes, the last axis fastest.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/axis_names.h"

namespace irc {

struct DeviceMatrix {
  std::vector<int64_t> dims;
  AxisNames names;  // one per axis; `axis_0, axis_1, ...` when not given

  static DeviceMatrix unnamed(std::vector<int64_t> dims);
  int rank() const { return static_cast<int>(dims.size()); }
  int64_t deviceCount() const;
  // coord[i] = (rank / prod(dims[i+1:])) % dims[i]
  std::vector<int64_t> coord(int64_t deviceRank) const;
  int64_t rankOf(const std::vector<int64_t>& coord) const;
  std::optional<int> axisIndex(std::string_view name) const;
  bool operator==(const DeviceMatrix& o) const { return dims == o.dims; }
};

// The ranks that agree with `deviceRank` on every axis not in `axes`, ascending: the group of a
// collective along those axes. A rank past the mesh's devices (a later pipeline stage) gets the
// group of its position within its own block of deviceCount() ranks.
std::vector<int64_t> groupAlongAxes(const DeviceMatrix& mesh, int64_t deviceRank, const std::vector<int>& axes);

// MindSpore's communication group name: `<n>-<std::hash of "r0-r1-...">` (64-bit libstdc++).
std::string groupRanksText(const std::vector<int64_t>& ranks);  // "0-1-2-3"
std::string mindsporeGroupName(const std::vector<int64_t>& ranks);

}  // namespace irc
