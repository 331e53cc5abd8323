#include "plan/layout_unification.h"

#include <algorithm>

namespace irc {
namespace {

// Prefix products of the non-trivial axis sizes; the cut points of a row-major mesh.
std::vector<int64_t> cutsOf(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> cuts;
  int64_t acc = 1;
  for (int64_t s : sizes)
    if (s > 1) cuts.push_back(acc *= s);
  return cuts;
}

// The common refinement of two cut sequences, as sizes; nullopt when one does not divide the
// next (no refinement exists).
std::optional<std::vector<int64_t>> refine(std::vector<int64_t> cuts, const std::vector<int64_t>& more, int64_t total) {
  cuts.insert(cuts.end(), more.begin(), more.end());
  cuts.push_back(total);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<int64_t> sizes;
  int64_t prev = 1;
  for (int64_t c : cuts) {
    if (c % prev != 0) return std::nullopt;
    if (c / prev > 1) sizes.push_back(c / prev);
    prev = c;
  }
  return sizes;
}

}  // namespace

std::vector<std::vector<int>> axisRuns(const DeviceMatrix& mesh, const std::vector<int64_t>& sizes) {
  std::vector<std::vector<int>> runs(mesh.rank());
  size_t next = 0;
  for (int a = 0; a < mesh.rank(); ++a) {
    int64_t left = mesh.dims[a];
    while (left > 1) {
      runs[a].push_back(static_cast<int>(next));
      left /= sizes[next++];
    }
  }
  return runs;
}

namespace {

std::vector<std::vector<int>> remap(const TensorLayout& l, const std::vector<std::vector<int>>& runs) {
  std::vector<std::vector<int>> dims;
  for (const auto& axes : l.dims) {
    std::vector<int> out;
    for (int a : axes) out.insert(out.end(), runs[a].begin(), runs[a].end());
    dims.push_back(out);
  }
  return dims;
}

}  // namespace

std::optional<Unified> unify(const TensorLayout& a, const TensorLayout& b) {
  std::optional<std::vector<int64_t>> sizes = refine(cutsOf(a.mesh.dims), cutsOf(b.mesh.dims), a.mesh.deviceCount());
  if (!sizes) return std::nullopt;
  // Refine further until every axis covers exactly one sub-dim of every tensor dim.
  for (int round = 0; round < 64; ++round) {
    DeviceMatrix mesh = DeviceMatrix::unnamed(*sizes);
    auto runsA = axisRuns(a.mesh, *sizes), runsB = axisRuns(b.mesh, *sizes);
    auto dimsA = remap(a, runsA), dimsB = remap(b, runsB);
    Unified u;
    u.mesh = mesh;
    bool changed = false;
    for (size_t d = 0; d < a.shape.size() && !changed; ++d) {
      auto cutsFor = [&](const std::vector<int>& axes) {
        std::vector<int64_t> c;
        int64_t acc = 1;
        for (int x : axes) c.push_back(acc *= mesh.dims[x]);
        return c;
      };
      std::vector<int64_t> ca = cutsFor(dimsA[d]), cb = cutsFor(dimsB[d]);
      auto sub = refine(ca, cb, a.shape[d]);
      if (!sub) return std::nullopt;
      // Each axis must own exactly one sub-dim; one that spans several must be split itself.
      auto place = [&](const std::vector<int>& axes, std::vector<int>& owner) -> std::optional<std::pair<int, int64_t>> {
        size_t s = 0;
        int64_t reached = 1;
        for (int x : axes) {
          int64_t target = reached * mesh.dims[x];
          size_t first = s;
          while (reached < target && s < sub->size()) reached *= (*sub)[s++];
          if (s - first != 1) return std::make_pair(x, (*sub)[first]);
          owner[first] = x;
        }
        return std::nullopt;
      };
      std::vector<int> ownA(sub->size(), -1), ownB(sub->size(), -1);
      auto splitA = place(dimsA[d], ownA);
      auto splitB = splitA ? splitA : place(dimsB[d], ownB);
      if (splitB) {
        // Split axis `x` into (first, rest): refine the mesh sizes and start over.
        auto [x, first] = *splitB;
        if (mesh.dims[x] % first != 0) return std::nullopt;
        sizes->insert(sizes->begin() + x + 1, mesh.dims[x] / first);
        (*sizes)[x] = first;
        changed = true;
        break;
      }
      // A sub-dim neither layout splits merges into the one before it: the blocks are the same,
      // and a dim that holds at most one axis on both sides is not expanded at all.
      std::vector<int64_t> merged;
      std::vector<int> mA, mB;
      for (size_t k = 0; k < sub->size(); ++k) {
        if (k > 0 && ownA[k] < 0 && ownB[k] < 0) {
          merged.back() *= (*sub)[k];
          continue;
        }
        merged.push_back((*sub)[k]);
        mA.push_back(ownA[k]);
        mB.push_back(ownB[k]);
      }
      if (merged.empty()) {  // a dim of size 1
        merged.push_back(1);
        mA.push_back(-1);
        mB.push_back(-1);
      }
      u.groupOfDim.push_back(static_cast<int>(u.expanded.size()));
      u.expanded.insert(u.expanded.end(), merged.begin(), merged.end());
      u.from.insert(u.from.end(), mA.begin(), mA.end());
      u.to.insert(u.to.end(), mB.begin(), mB.end());
    }
    if (!changed) return u;
  }
  return std::nullopt;
}

std::vector<int> partialOnUnified(const TensorLayout& a, const std::vector<std::vector<int>>& runs) {
  std::vector<int> axes;
  for (int p : a.partialAxes) axes.insert(axes.end(), runs[p].begin(), runs[p].end());
  std::sort(axes.begin(), axes.end());
  return axes;
}

Shape localOf(const Shape& global, const std::vector<int>& axisPerDim, const DeviceMatrix& mesh) {
  Shape s = global;
  for (size_t d = 0; d < s.size(); ++d)
    if (axisPerDim[d] >= 0) s[d] /= mesh.dims[axisPerDim[d]];
  return s;
}

std::vector<int> subDimOwners(const Unified& u) {
  std::vector<int> owner(u.expanded.size(), 0);
  for (size_t d = 0; d < u.groupOfDim.size(); ++d)
    for (size_t s = u.groupOfDim[d]; s < owner.size(); ++s) owner[s] = static_cast<int>(d);
  return owner;
}

}  // namespace irc
