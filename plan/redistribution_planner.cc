#include "plan/redistribution_planner.h"

#include "ops/collective.h"
#include "plan/layout_unification.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include <fmt/format.h>

namespace irc {

namespace {

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
  builder.setDimMap(subDimOwners(*u));
  builder.reshape(localOf(u->expanded, u->from, u->mesh), u->expanded);
  inferOperators(builder, u->from, u->to, options.enableAlltoall);
  builder.reshape(b.sliceShape(), b.shape);
  return builder.finish();
}

}  // namespace

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
