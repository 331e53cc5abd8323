#include "passes/redistribution_planner.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include <fmt/format.h>

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

// Maps each axis of `mesh` to the run of axes of the refined mesh `sizes` it covers.
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

// A layout restated on a unified form: per sub-dim one axis (or -1) of the common mesh.
struct Unified {
  DeviceMatrix mesh;
  Shape expanded;      // global shape with each dim expanded into sub-dims
  std::vector<int> from, to;  // per sub-dim the axis
  std::vector<int> groupOfDim;  // per original dim, its first sub-dim
};

std::vector<std::vector<int>> remap(const TensorLayout& l, const std::vector<std::vector<int>>& runs) {
  std::vector<std::vector<int>> dims;
  for (const auto& axes : l.dims) {
    std::vector<int> out;
    for (int a : axes) out.insert(out.end(), runs[a].begin(), runs[a].end());
    dims.push_back(out);
  }
  return dims;
}

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

class PlanBuilder {
 public:
  PlanBuilder(const DeviceMatrix& mesh, Shape local, Shape global, const PlannerOptions& o)
      : mesh_(mesh), local_(std::move(local)), global_(std::move(global)), options_(o) {}

  // Sub-dim -> original tensor dim, for messages (set once the shape is expanded).
  void setDimMap(std::vector<int> subToDim) { subToDim_ = std::move(subToDim); }

  void reshape(const Shape& localTo, const Shape& globalTo) {
    if (localTo == local_ && globalTo.size() == global_.size()) return;
    RedistStep s = base(RedistStep::Kind::Reshape);
    s.localAfter = localTo;
    s.globalAfter = globalTo;
    global_ = globalTo;
    push(s);
  }
  void split(int dim, int axis) {
    RedistStep s = base(RedistStep::Kind::Split);
    s.dim = dim;
    s.axes = {axis};
    s.localAfter[dim] /= mesh_.dims[axis];
    push(s);
  }
  void gather(int dim, int axis) {
    RedistStep s = base(RedistStep::Kind::Gather);
    s.dim = dim;
    s.axes = {axis};
    s.localAfter[dim] *= mesh_.dims[axis];
    push(s);
  }
  void alltoall(int splitDim, int concatDim, int axis) {
    RedistStep s = base(RedistStep::Kind::AlltoAll);
    s.dim = splitDim;
    s.concatDim = concatDim;
    s.axes = {axis};
    s.localAfter[splitDim] /= mesh_.dims[axis];
    s.localAfter[concatDim] *= mesh_.dims[axis];
    push(s);
  }
  void allreduce(const std::vector<int>& axes, ReduceOp op) {
    RedistStep s = base(RedistStep::Kind::AllReduce);
    s.axes = axes;
    s.reduceOp = op;
    push(s);
  }
  const Shape& local() const { return local_; }
  RedistPlan finish() {
    double comm = 0, compute = 0;
    for (const auto& s : plan_.steps) {
      RedistCost c = stepCost(s, options_.dtypeBytes);
      comm += c.comm;
      compute += c.compute;
    }
    plan_.cost = {correctComm(comm), compute};
    return std::move(plan_);
  }

 private:
  RedistStep base(RedistStep::Kind kind) {
    RedistStep s;
    s.kind = kind;
    s.mesh = mesh_;
    s.localBefore = local_;
    s.localAfter = local_;
    s.globalAfter = global_;
    return s;
  }
  void push(RedistStep s) {
    if (s.dim >= 0 && static_cast<size_t>(s.dim) < subToDim_.size()) s.tensorDim = subToDim_[s.dim];
    local_ = s.localAfter;
    plan_.steps.push_back(std::move(s));
  }
  DeviceMatrix mesh_;
  Shape local_;
  Shape global_;
  std::vector<int> subToDim_;
  PlannerOptions options_;
  RedistPlan plan_;
};

Shape localOf(const Shape& global, const std::vector<int>& axisPerDim, const DeviceMatrix& mesh) {
  Shape s = global;
  for (size_t d = 0; d < s.size(); ++d)
    if (axisPerDim[d] >= 0) s[d] /= mesh.dims[axisPerDim[d]];
  return s;
}

// Split / permute / concat passes until `cur` equals `dst` (irc rule: dims ascending).
void inferOperators(PlanBuilder& b, std::vector<int> cur, const std::vector<int>& dst, bool alltoall) {
  auto holder = [&](int axis) {
    for (size_t d = 0; d < cur.size(); ++d)
      if (cur[d] == axis) return static_cast<int>(d);
    return -1;
  };
  while (cur != dst) {
    bool progress = false;
    for (size_t d = 0; d < cur.size(); ++d)  // split pass
      if (cur[d] < 0 && dst[d] >= 0 && holder(dst[d]) < 0) {
        b.split(static_cast<int>(d), dst[d]);
        cur[d] = dst[d];
        progress = true;
      }
    for (size_t d = 0; d < cur.size(); ++d) {  // permute pass
      if (cur[d] >= 0 || dst[d] < 0) continue;
      int c = holder(dst[d]);
      if (c < 0 || c == static_cast<int>(d)) continue;
      if (alltoall) {
        b.alltoall(static_cast<int>(d), c, dst[d]);
      } else {
        b.gather(c, dst[d]);
        b.split(static_cast<int>(d), dst[d]);
      }
      cur[c] = -1;
      cur[d] = dst[d];
      progress = true;
    }
    for (size_t d = 0; d < cur.size(); ++d)  // concat pass
      if (cur[d] >= 0 && cur[d] != dst[d]) {
        b.gather(static_cast<int>(d), cur[d]);
        cur[d] = -1;
        progress = true;
      }
    if (!progress) {
      for (size_t d = 0; d < cur.size(); ++d)
        if (cur[d] >= 0 && cur[d] != dst[d]) {
          b.gather(static_cast<int>(d), cur[d]);
          cur[d] = -1;
          break;
        }
    }
  }
}

RedistPlan planUnified(const TensorLayout& a, const TensorLayout& b, const PlannerOptions& options) {
  std::optional<Unified> u = unify(a, b);
  if (!u) return {};
  std::vector<int64_t> sizes = u->mesh.dims;
  // Equal once unified (a dim split 8 ways over one axis is the same as over 2 x 4): nothing to
  // do unless a partial value must be reduced.
  if (u->from == u->to && a.partialAxes.empty()) return {};
  PlanBuilder builder(u->mesh, a.sliceShape(), a.shape, options);
  std::vector<int> partial = partialOnUnified(a, axisRuns(a.mesh, sizes));
  if (!partial.empty()) builder.allreduce(partial, a.partialOp);
  std::vector<int> subToDim(u->expanded.size(), 0);
  for (size_t d = 0; d < u->groupOfDim.size(); ++d)
    for (size_t s = u->groupOfDim[d]; s < subToDim.size(); ++s) subToDim[s] = static_cast<int>(d);
  builder.setDimMap(u->expanded == a.shape ? std::vector<int>() : subToDim);
  if (u->expanded == a.shape) {
    std::vector<int> identity(a.shape.size());
    for (size_t d = 0; d < identity.size(); ++d) identity[d] = static_cast<int>(d);
    builder.setDimMap(identity);
  }
  builder.reshape(localOf(u->expanded, u->from, u->mesh), u->expanded);
  inferOperators(builder, u->from, u->to, options.enableAlltoall);
  builder.reshape(b.sliceShape(), b.shape);
  return builder.finish();
}

}  // namespace

RedistCost stepCost(const RedistStep& step, int dtypeBytes) {
  double p = static_cast<double>(numElements(step.localBefore)) * dtypeBytes;
  double n = static_cast<double>(step.groupSize());
  switch (step.kind) {
    case RedistStep::Kind::Split: return {0, p};
    case RedistStep::Kind::Gather: return {0.5 * (n + 1) * p, step.dim == 0 ? p : p + 2 * n * p};
    case RedistStep::Kind::AlltoAll: return {4 * p, p};
    case RedistStep::Kind::Reshape: return {0, 2 * p};
    case RedistStep::Kind::AllReduce: return {2 * (n - 1) / n * p, p};
    case RedistStep::Kind::ReduceScatter: return {(n - 1) / n * p, p};
    case RedistStep::Kind::RealDiv:
    case RedistStep::Kind::VocabOffset: return {0, p};
  }
  return {};
}

double correctComm(double comm) {
  if (comm <= 0) return 0;
  return comm <= 2048 ? 3072 : comm + 1024;
}

RedistPlan planRedistribution(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options) {
  if (from.sameAs(to)) return {};
  if (std::optional<Unified> u = unify(from, to)) return planUnified(from, to, options);
  // No common refinement: gather whole on A's mesh, then split to B on B's mesh.
  TensorLayout whole = TensorLayout::replicated(from.mesh, from.shape);
  RedistPlan first = planUnified(from, whole, options);
  TensorLayout wholeB = TensorLayout::replicated(to.mesh, to.shape);
  RedistPlan second = planUnified(wholeB, to, options);
  first.steps.insert(first.steps.end(), second.steps.begin(), second.steps.end());
  first.cost.comm += second.cost.comm;
  first.cost.compute += second.cost.compute;
  return first;
}



}  // namespace irc
