#include "plan/optimal_planner.h"

#include <algorithm>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>

#include "ops/collective.h"
#include "plan/layout_unification.h"

namespace irc {

double allReduceTime(double bytes, double n, const CostModel& m) {
  return n <= 1 ? 0 : alphaBetaSeconds(CollectiveKind::AllReduce, n, bytes, m);
}

double stepTime(const RedistStep& step, int dtypeBytes, const CostModel& m) {
  double b = static_cast<double>(numElements(step.localBefore)) * dtypeBytes;
  double n = static_cast<double>(step.groupSize());
  if (std::optional<CollectiveKind> kind = collectiveOf(step)) {
    if (*kind == CollectiveKind::AllReduce) return allReduceTime(b, n, m);
    // Off dim 0 an AllGather's blocks are split and concatenated after it, and a ReduceScatter's
    // local tensor split along the dim and stacked on dim 0 before it (one copy each way).
    std::optional<double> copied = offDim0CopyBytes(step, b);
    double copies = copied ? 2 * *copied * m.gamma : 0;
    return alphaBetaSeconds(*kind, n, b, m) + copies;  // a Send: one message to one peer
  }
  std::optional<double> copied = localStepCopyBytes(step, b);
  return copied ? *copied * m.gamma : 0;  // none: a mirror's identity forward; a Receive (its Send counts)
}

double planTime(const RedistPlan& plan, int dtypeBytes, const CostModel& model) {
  double t = 0;
  for (const auto& s : plan.steps) t += stepTime(s, dtypeBytes, model);
  return t;
}

namespace {

// A search state: per sub-dim the axis splitting it (or -1), and the axes still partial.
struct State {
  std::vector<int> cur;
  uint32_t partial = 0;  // bit a: unified axis a is still partial
};

// One byte per sub-dim and four for the mask: exact (no collisions) and short enough to stay in
// std::string's inline buffer for the tensors irc sees.
std::string keyOf(const State& s) {
  std::string k;
  for (int a : s.cur) k += static_cast<char>(a + 1);
  for (int i = 0; i < 4; ++i) k += static_cast<char>((s.partial >> (8 * i)) & 0xFF);
  return k;
}

// A move, as the search needs it: what it does, not yet the full step.
struct Move {
  RedistStep::Kind kind;
  int dim = -1, concatDim = -1;
  uint32_t axes = 0;  // bit mask of unified axes
};

std::vector<int> axesOf(uint32_t mask) {
  std::vector<int> axes;
  for (int a = 0; a < 32; ++a)
    if (mask & (1u << a)) axes.push_back(a);
  return axes;
}

class Search {
 public:
  Search(const Unified& u, ReduceOp op, const PlannerOptions& options, const StepTimer& timer)
      : u_(u), op_(op), options_(options), timer_(timer) {}

  State apply(const State& s, const Move& m) const {
    State n = s;
    applyStepToMap(m.kind, m.dim, m.concatDim, m.axes, n.cur, n.partial);
    return n;
  }

  RedistStep stepOf(const State& s, const Move& m) const {
    RedistStep st;
    st.kind = m.kind;
    st.mesh = u_.mesh;
    st.localBefore = localOf(u_.expanded, s.cur, u_.mesh);
    st.localAfter = localOf(u_.expanded, apply(s, m).cur, u_.mesh);
    st.globalAfter = u_.expanded;
    st.reduceOp = op_;
    st.dim = m.dim;
    st.concatDim = m.concatDim;
    st.axes = axesOf(m.axes);
    return st;
  }

  double cost(const State& s, const Move& m) const {
    // stepTime on a step built without copying the mesh: only sizes matter.
    RedistStep st;
    st.kind = m.kind;
    st.dim = m.dim;
    st.localBefore = localOf(u_.expanded, s.cur, u_.mesh);
    st.mesh.dims = u_.mesh.dims;
    st.axes = axesOf(m.axes);
    return timer_(st, options_.dtypeBytes);
  }

  // Every move from `s`, in a fixed order (equal-cost ties resolve the same way every run).
  void movesFrom(const State& s, std::vector<Move>& moves) const {
    moves.clear();
    Shape local = localOf(u_.expanded, s.cur, u_.mesh);
    uint32_t usedAxes = 0;
    for (int a : s.cur)
      if (a >= 0) usedAxes |= 1u << a;
    if (s.partial) {
      moves.push_back({RedistStep::Kind::AllReduce, -1, -1, s.partial});
      // ReduceScatter over one partial axis onto any unsplit sub-dim it divides (a scalar has
      // none); with several partial axes, the search orders them.
      for (size_t d = 0; d < s.cur.size(); ++d)
        if (s.cur[d] < 0)
          for (int a : axesOf(s.partial))
            if (local[d] % u_.mesh.dims[a] == 0)
              moves.push_back({RedistStep::Kind::ReduceScatter, static_cast<int>(d), -1, 1u << a});
    }
    for (size_t d = 0; d < s.cur.size(); ++d) {
      int a = s.cur[d];
      if (a >= 0) {
        moves.push_back({RedistStep::Kind::Gather, static_cast<int>(d), -1, 1u << a});
        for (size_t e = 0; e < s.cur.size(); ++e)
          if (e != d && s.cur[e] < 0 && local[e] % u_.mesh.dims[a] == 0)
            moves.push_back({RedistStep::Kind::AlltoAll, static_cast<int>(e), static_cast<int>(d), 1u << a});
      } else {
        for (int x = 0; x < u_.mesh.rank(); ++x)
          if (!((usedAxes | s.partial) & (1u << x)) && local[d] % u_.mesh.dims[x] == 0)
            moves.push_back({RedistStep::Kind::Split, static_cast<int>(d), -1, 1u << x});
      }
    }
  }

  // Dijkstra from `start` to `goal`; the steps of the cheapest path.
  std::vector<RedistStep> run(const State& start, const State& goal) const {
    struct Visit {
      double cost;
      std::string parent;
      Move move;
      State state;
      bool done = false;
    };
    std::unordered_map<std::string, Visit> visits;
    using Entry = std::tuple<double, long, std::string>;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> open;
    long counter = 0;
    std::string startKey = keyOf(start), goalKey = keyOf(goal);
    visits[startKey] = {0, startKey, {}, start};
    open.push({0, counter++, startKey});
    std::vector<Move> moves;
    while (!open.empty()) {
      auto [c, order, key] = open.top();
      open.pop();
      Visit& v = visits[key];
      if (v.done || c > v.cost) continue;
      v.done = true;
      if (key == goalKey) break;
      State here = v.state;
      movesFrom(here, moves);
      for (const Move& m : moves) {
        State next = apply(here, m);
        double nc = c + cost(here, m);
        std::string nk = keyOf(next);
        auto it = visits.find(nk);
        if (it != visits.end() && it->second.cost <= nc) continue;
        visits[nk] = {nc, key, m, next};
        open.push({nc, counter++, nk});
      }
    }
    std::vector<RedistStep> path;
    for (std::string k = goalKey; k != startKey;) {
      const Visit& v = visits.at(k);
      path.push_back(stepOf(visits.at(v.parent).state, v.move));
      k = v.parent;
    }
    std::reverse(path.begin(), path.end());
    return path;
  }

 private:
  const Unified& u_;
  ReduceOp op_;
  PlannerOptions options_;
  const StepTimer& timer_;
};

RedistPlan searchUnified(const TensorLayout& a, const TensorLayout& b, const Unified& u, const PlannerOptions& options,
                         const StepTimer& timer) {
  State start{u.from, 0}, goal{u.to, 0};
  for (int p : partialOnUnified(a, axisRuns(a.mesh, u.mesh.dims))) start.partial |= 1u << p;
  std::vector<RedistStep> path = Search(u, a.partialOp, options, timer).run(start, goal);
  std::vector<int> owners = subDimOwners(u);

  RedistPlan plan;
  auto reshape = [&](const Shape& before, const Shape& after, const Shape& global) {
    RedistStep r;
    r.kind = RedistStep::Kind::Reshape;
    r.mesh = u.mesh;
    r.localBefore = before;
    r.localAfter = after;
    r.globalAfter = global;
    plan.steps.push_back(r);
  };
  bool expanded = u.expanded != a.shape;
  if (expanded) reshape(a.sliceShape(), localOf(u.expanded, u.from, u.mesh), u.expanded);
  for (RedistStep& s : path) {
    if (s.dim >= 0 && static_cast<size_t>(s.dim) < owners.size()) s.tensorDim = owners[s.dim];
    plan.steps.push_back(s);
  }
  if (expanded) reshape(localOf(u.expanded, u.to, u.mesh), b.sliceShape(), b.shape);
  RedistCost cost;
  for (const auto& s : plan.steps) {
    RedistCost c = stepCost(s, options.dtypeBytes);
    cost.comm += c.comm;
    cost.compute += c.compute;
  }
  plan.cost = {correctComm(cost.comm), cost.compute};
  return plan;
}

}  // namespace

RedistPlan planOptimal(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options, const CostModel& model) {
  return planOptimal(from, to, options,
                     [&model](const RedistStep& step, int dtypeBytes) { return stepTime(step, dtypeBytes, model); });
}

RedistPlan planOptimal(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options, const StepTimer& timer) {
  if (from.sameAs(to)) return {};
  if (std::optional<Unified> u = unify(from, to)) {
    if (u->from == u->to && from.partialAxes.empty()) return {};
    return searchUnified(from, to, *u, options, timer);
  }
  // No common refinement: whole on A's mesh, then split to B on B's mesh, each part optimal.
  TensorLayout whole = TensorLayout::replicated(from.mesh, from.shape);
  RedistPlan first = planOptimal(from, whole, options, timer);
  RedistPlan second = planOptimal(TensorLayout::replicated(to.mesh, to.shape), to, options, timer);
  first.steps.insert(first.steps.end(), second.steps.begin(), second.steps.end());
  first.cost.comm += second.cost.comm;
  first.cost.compute += second.cost.compute;
  return first;
}

}  // namespace irc
