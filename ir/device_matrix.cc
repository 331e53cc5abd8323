#include "ir/device_matrix.h"

#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace irc {

DeviceMatrix DeviceMatrix::unnamed(std::vector<int64_t> dims) {
  DeviceMatrix m;
  m.names = AxisNames::unnamed(dims.size());
  m.dims = std::move(dims);
  return m;
}

int64_t DeviceMatrix::deviceCount() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> DeviceMatrix::coord(int64_t deviceRank) const {
  std::vector<int64_t> c(dims.size());
  for (int i = rank() - 1; i >= 0; --i) {
    c[i] = deviceRank % dims[i];
    deviceRank /= dims[i];
  }
  return c;
}

int64_t DeviceMatrix::rankOf(const std::vector<int64_t>& c) const {
  int64_t r = 0;
  for (int i = 0; i < rank(); ++i) r = r * dims[i] + c[i];
  return r;
}

std::optional<int> DeviceMatrix::axisIndex(std::string_view name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return std::nullopt;
}

std::vector<int64_t> groupAlongAxes(const DeviceMatrix& mesh, int64_t deviceRank, const std::vector<int>& axes) {
  std::vector<int64_t> base = mesh.coord(deviceRank);
  // A rank past the mesh is in a later pipeline stage's block of as many ranks: its group is the
  // same one shifted to that block.
  int64_t count0 = mesh.deviceCount();
  int64_t offset = count0 > 0 ? deviceRank - deviceRank % count0 : 0;
  // Enumerate the sub-mesh of `axes` in row-major order over ascending axis index: since ranks
  // are row-major too, the result comes out ascending.
  std::vector<int> sorted(axes);
  std::sort(sorted.begin(), sorted.end());
  int64_t count = 1;
  for (int a : sorted) count *= mesh.dims[a];
  std::vector<int64_t> ranks;
  ranks.reserve(count);
  for (int64_t k = 0; k < count; ++k) {
    std::vector<int64_t> c = base;
    int64_t rest = k;
    for (int i = static_cast<int>(sorted.size()) - 1; i >= 0; --i) {
      c[sorted[i]] = rest % mesh.dims[sorted[i]];
      rest /= mesh.dims[sorted[i]];
    }
    ranks.push_back(mesh.rankOf(c) + offset);
  }
  return ranks;
}

std::string groupRanksText(const std::vector<int64_t>& ranks) { return fmt::format("{}", fmt::join(ranks, "-")); }

std::string mindsporeGroupName(const std::vector<int64_t>& ranks) {
  // MindSpore hashes the joined rank list with std::hash<std::string>; libstdc++'s is
  // murmur-based and stable for a given 64-bit ABI, which is what the spec pins.
  std::string joined = groupRanksText(ranks);
  return fmt::format("{}-{}", ranks.size(), std::hash<std::string>{}(joined));
}

}  // namespace irc
