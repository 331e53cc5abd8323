#include "ir/tensor_layout.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace irc {

TensorLayout TensorLayout::replicated(DeviceMatrix mesh, Shape shape) {
  TensorLayout l;
  l.dims.assign(shape.size(), {});
  l.mesh = std::move(mesh);
  l.shape = std::move(shape);
  return l;
}

int64_t TensorLayout::splitsOfDim(size_t dim) const {
  int64_t n = 1;
  for (int a : dims[dim]) n *= mesh.dims[a];
  return n;
}

Shape TensorLayout::sliceShape() const {
  Shape s = shape;
  for (size_t d = 0; d < s.size(); ++d) s[d] /= splitsOfDim(d);
  return s;
}

std::vector<int64_t> TensorLayout::blockIndex(int64_t deviceRank) const {
  std::vector<int64_t> c = mesh.coord(deviceRank);
  std::vector<int64_t> index(dims.size(), 0);
  for (size_t d = 0; d < dims.size(); ++d)
    for (int a : dims[d]) index[d] = index[d] * mesh.dims[a] + c[a];
  return index;
}

std::vector<std::pair<int64_t, int64_t>> TensorLayout::sliceRanges(int64_t deviceRank) const {
  Shape slice = sliceShape();
  std::vector<int64_t> index = blockIndex(deviceRank);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t d = 0; d < dims.size(); ++d) ranges.emplace_back(index[d] * slice[d], (index[d] + 1) * slice[d]);
  return ranges;
}

int64_t TensorLayout::shardNumber(int64_t deviceRank) const {
  std::vector<int64_t> index = blockIndex(deviceRank);
  int64_t n = 0;
  for (size_t d = 0; d < dims.size(); ++d) n = n * splitsOfDim(d) + index[d];
  return n;
}

std::vector<int> TensorLayout::usedAxes() const {
  std::vector<int> used;
  for (const auto& axes : dims) used.insert(used.end(), axes.begin(), axes.end());
  std::sort(used.begin(), used.end());
  return used;
}

std::vector<int64_t> TensorLayout::replicaGroup(int64_t deviceRank) const {
  std::vector<int> holding = usedAxes();
  holding.insert(holding.end(), partialAxes.begin(), partialAxes.end());
  std::vector<int> free;
  for (int a = 0; a < mesh.rank(); ++a)
    if (std::find(holding.begin(), holding.end(), a) == holding.end()) free.push_back(a);
  return groupAlongAxes(mesh, deviceRank, free);
}

std::vector<std::vector<int>> TensorLayout::tensorMapEntries() const {
  std::vector<std::vector<int>> out;
  for (const auto& axes : dims) {
    std::vector<int> e;
    for (int a : axes) e.push_back(mesh.rank() - 1 - a);
    out.push_back(e);
  }
  return out;
}

std::vector<int> TensorLayout::partialFromRight() const {
  std::vector<int> out;
  for (int a : partialAxes) out.push_back(mesh.rank() - 1 - a);
  std::sort(out.begin(), out.end());
  return out;
}

TensorLayout TensorLayout::standardForm() const {
  std::vector<int> renumber(mesh.rank(), -1);
  TensorLayout s;
  s.shape = shape;
  s.partialOp = partialOp;
  std::vector<std::string> names;
  for (int a = 0; a < mesh.rank(); ++a)
    if (mesh.dims[a] != 1) {
      renumber[a] = s.mesh.rank();
      s.mesh.dims.push_back(mesh.dims[a]);
      names.push_back(a < static_cast<int>(mesh.names.size()) ? mesh.names[a] : fmt::format("axis_{}", a));
    }
  s.mesh.names = std::move(names);
  for (const auto& axes : dims) {
    std::vector<int> kept;
    for (int a : axes)
      if (renumber[a] >= 0) kept.push_back(renumber[a]);
    s.dims.push_back(kept);
  }
  for (int a : partialAxes)
    if (renumber[a] >= 0) s.partialAxes.push_back(renumber[a]);
  if (s.partialAxes.empty()) s.partialOp = ReduceOp::Sum;
  return s;
}

namespace {

// What an axis does in a layout: unused, partial, or the `position`-th axis of `dim`.
struct AxisRole {
  int dim = -1;  // -1: not on a dim
  int position = 0;
  bool partial = false;
};

std::vector<AxisRole> axisRoles(const TensorLayout& l) {
  std::vector<AxisRole> roles(l.mesh.rank());
  for (size_t d = 0; d < l.dims.size(); ++d)
    for (size_t k = 0; k < l.dims[d].size(); ++k) roles[l.dims[d][k]] = {static_cast<int>(d), static_cast<int>(k), false};
  for (int a : l.partialAxes) roles[a].partial = true;
  return roles;
}

// Whether axis a + 1 continues axis a's role, so that the two act as one axis of their product.
bool continues(const AxisRole& a, const AxisRole& next) {
  if (a.partial || next.partial) return a.partial && next.partial;
  if (a.dim < 0 || next.dim < 0) return a.dim < 0 && next.dim < 0;
  return a.dim == next.dim && next.position == a.position + 1;
}

}  // namespace

TensorLayout TensorLayout::coarsestForm() const {
  TensorLayout s = standardForm();
  std::vector<AxisRole> roles = axisRoles(s);
  for (int a = 0; a + 1 < s.mesh.rank();) {
    if (!continues(roles[a], roles[a + 1])) {
      ++a;
      continue;
    }
    // Merge a + 1 into a: drop it from the lists and renumber the axes after it.
    s.mesh.dims[a] *= s.mesh.dims[a + 1];
    s.mesh.dims.erase(s.mesh.dims.begin() + a + 1);
    auto drop = [&](std::vector<int>& axes) {
      axes.erase(std::remove(axes.begin(), axes.end(), a + 1), axes.end());
      for (int& x : axes)
        if (x > a + 1) --x;
    };
    for (auto& axes : s.dims) drop(axes);
    drop(s.partialAxes);
    roles = axisRoles(s);
  }
  s.mesh.names = AxisNames::unnamed(s.mesh.dims.size());
  return s;
}

namespace {

// Whether two axis lists are equal once the size-1 axes are dropped and the rest renumbered.
bool sameKeptAxes(const std::vector<int>& a, const int* renumberA, const std::vector<int>& b, const int* renumberB) {
  size_t i = 0, j = 0;
  while (true) {
    while (i < a.size() && renumberA[a[i]] < 0) ++i;
    while (j < b.size() && renumberB[b[j]] < 0) ++j;
    if (i == a.size() || j == b.size()) return i == a.size() && j == b.size();
    if (renumberA[a[i]] != renumberB[b[j]]) return false;
    ++i, ++j;
  }
}

// Per axis its index among the axes of size > 1, or -1; `kept` gets the sizes of those axes.
void renumberAxes(const DeviceMatrix& m, int* renumber, int64_t* kept, int& keptCount) {
  keptCount = 0;
  for (int a = 0; a < m.rank(); ++a) {
    renumber[a] = -1;
    if (m.dims[a] != 1) {
      renumber[a] = keptCount;
      kept[keptCount++] = m.dims[a];
    }
  }
}

}  // namespace

// standardForm() of both compared, without building them: redistribution and propagation ask
// this of every edge of the graph, so meshes of up to kInline axes are renumbered on the stack.
bool TensorLayout::sameAs(const TensorLayout& other) const {
  if (shape != other.shape || dims.size() != other.dims.size()) return false;
  constexpr int kInline = 16;
  int renumberA[kInline], renumberB[kInline];
  int64_t keptA[kInline], keptB[kInline];
  std::vector<int> heapRenumberA, heapRenumberB;
  std::vector<int64_t> heapKeptA, heapKeptB;
  int* ra = renumberA;
  int* rb = renumberB;
  int64_t* ka = keptA;
  int64_t* kb = keptB;
  if (mesh.rank() > kInline) {
    heapRenumberA.resize(mesh.rank()), heapKeptA.resize(mesh.rank());
    ra = heapRenumberA.data(), ka = heapKeptA.data();
  }
  if (other.mesh.rank() > kInline) {
    heapRenumberB.resize(other.mesh.rank()), heapKeptB.resize(other.mesh.rank());
    rb = heapRenumberB.data(), kb = heapKeptB.data();
  }
  int countA = 0, countB = 0;
  renumberAxes(mesh, ra, ka, countA);
  renumberAxes(other.mesh, rb, kb, countB);
  // Different meshes may still place the data alike (one refines the other): compare coarsest.
  if (countA != countB || !std::equal(ka, ka + countA, kb)) {
    if (mesh.deviceCount() != other.mesh.deviceCount()) return false;
    TensorLayout a = coarsestForm(), b = other.coarsestForm();
    return a.mesh.dims == b.mesh.dims && a.dims == b.dims && a.partialAxes == b.partialAxes &&
           (a.partialAxes.empty() || a.partialOp == b.partialOp);
  }
  for (size_t d = 0; d < dims.size(); ++d)
    if (!sameKeptAxes(dims[d], ra, other.dims[d], rb)) return false;
  if (!sameKeptAxes(partialAxes, ra, other.partialAxes, rb)) return false;
  bool partial = std::any_of(partialAxes.begin(), partialAxes.end(), [&](int a) { return ra[a] >= 0; });
  return !partial || partialOp == other.partialOp;
}

std::string divisorsText(int64_t size) {
  // The divisors from the prime factorization, not by trial division up to `size` (a dim of
  // 10^18 would take hours); at most a handful are listed.
  constexpr size_t kShown = 12;
  std::vector<std::pair<int64_t, int>> primes;
  int64_t rest = size;
  for (int64_t p = 2; p <= rest / p; ++p) {
    if (rest % p != 0) {
      if (p > 1'000'000) break;  // the rest is a large prime or a product of large ones
      continue;
    }
    int e = 0;
    while (rest % p == 0) rest /= p, ++e;
    primes.emplace_back(p, e);
  }
  if (rest > 1) primes.emplace_back(rest, 1);
  std::vector<int64_t> ds{1};
  for (auto [p, e] : primes) {
    size_t n = ds.size();
    int64_t power = 1;
    for (int i = 0; i < e; ++i) {
      power *= p;
      for (size_t j = 0; j < n; ++j) ds.push_back(ds[j] * power);
    }
  }
  std::sort(ds.begin(), ds.end());
  if (ds.size() <= kShown) return fmt::format("{}", fmt::join(ds, ", "));
  std::vector<int64_t> head(ds.begin(), ds.begin() + kShown - 1);
  return fmt::format("{}, ... ({} divisors in all), {}", fmt::join(head, ", "), ds.size(), ds.back());
}

std::optional<LayoutProblem> validateLayout(const TensorLayout& layout, std::string_view tensorName) {
  if (layout.dims.size() != layout.shape.size())
    return LayoutProblem{fmt::format("the layout of '{}' has {} entries; the tensor has rank {} (shape {})", tensorName,
                                     layout.dims.size(), layout.shape.size(), formatShape(layout.shape))};
  std::vector<int> seenOnDim(layout.mesh.rank(), -2);
  auto axisName = [&](int a) {
    return a < static_cast<int>(layout.mesh.names.size()) ? layout.mesh.names[a] : fmt::format("axis_{}", a);
  };
  for (size_t d = 0; d < layout.dims.size(); ++d) {
    for (int a : layout.dims[d]) {
      if (a < 0 || a >= layout.mesh.rank())
        return LayoutProblem{fmt::format("device axis {} is out of range for a device matrix of rank {}", a, layout.mesh.rank()),
                             static_cast<int>(d)};
      if (seenOnDim[a] != -2)
        return LayoutProblem{fmt::format("device axis '{}' is used twice in the layout of '{}' (dims {} and {})", axisName(a),
                                         tensorName, seenOnDim[a], d),
                             static_cast<int>(d)};
      seenOnDim[a] = static_cast<int>(d);
    }
    int64_t splits = layout.splitsOfDim(d);
    if (!splitsEvenly(layout.shape[d], splits))
      return LayoutProblem{fmt::format("dim {} of '{}' (size {}) cannot be split {} ways; split counts that divide it: {}", d,
                                       tensorName, layout.shape[d], splits, divisorsText(layout.shape[d])),
                           static_cast<int>(d)};
  }
  for (int a : layout.partialAxes) {
    if (a < 0 || a >= layout.mesh.rank())
      return LayoutProblem{fmt::format("partial axis {} is out of range for a device matrix of rank {}", a, layout.mesh.rank())};
    if (seenOnDim[a] != -2)
      return LayoutProblem{fmt::format("device axis '{}' of '{}' is both {} and partial", axisName(a), tensorName,
                                       seenOnDim[a] >= 0 ? fmt::format("splitting dim {}", seenOnDim[a]) : "partial")};
    seenOnDim[a] = -1;
  }
  return std::nullopt;
}

double sliceBytes(const TensorLayout& layout, DType dtype) {
  return static_cast<double>(numElements(layout.sliceShape())) * byteSize(dtype);
}

}  // namespace irc
