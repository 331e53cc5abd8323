// Shardy's factor propagation (seed 003, spec §6) over the op rules: tensor shardings (per dim
// mesh axes, major first, open or closed, with a user priority) grow along factors to a fixed
// point, under the op-priority levels and user-priority rounds; then every op's sharding is read
// off its tensors, conflicts resolved by the total size of the tensors carrying each candidate.
//
// Interpretation of the op-priority levels (the seed leaves their edges open): 0 elementwise /
// reshape / transpose ops whose operands have one use; 1 those ops with any use count; 2 every
// op along pass-through factors; 3 and 4 every factor of every op (reduction factors included;
// a split reduction factor makes the results partial, completed by an AllReduce).
#include <algorithm>
#include <deque>
#include <set>

#include <fmt/format.h>

#include "passes/sharding_propagation.h"

namespace irc {
namespace {

struct DimState {
  std::vector<int> axes;
  bool open = true;
  int64_t priority = 0;
  bool frozen = false;  // a dim of lower user priority, not yet restored
};

struct TensorState {
  std::vector<DimState> dims;
  std::vector<int> partial;
  std::set<int> barred;  // replicated axes
  int64_t elements = 1;
};

bool elementwiseLike(const std::string& type) {
  const OpDef* def = findOpDef(type);
  if (!def) return false;
  switch (def->family) {
    case OpFamily::Unary: case OpFamily::Cast: case OpFamily::Broadcast: case OpFamily::BiasAdd: case OpFamily::Reshape:
    case OpFamily::Transpose: case OpFamily::ExpandDims: case OpFamily::Squeeze: return true;
    default: return false;
  }
}

class FactorPropagation {
 public:
  FactorPropagation(Graph& g, const PropagationInput& in, DeviceMatrix mesh)
      : graph_(g), in_(in), mesh_(std::move(mesh)), uses_(computeUses(g)) {
    state_.resize(g.values.size());
    for (size_t v = 0; v < g.values.size(); ++v) {
      const Value& value = g.values[v];
      state_[v].dims.resize(value.type.shape.size());
      state_[v].elements = numElements(value.type.shape);
    }
  }

  void seed() {
    // Tensor annotations and configured ops enter as shardings closed on every dim that `open`
    // does not open, with their priority.
    for (size_t v = 0; v < graph_.values.size(); ++v)
      if (graph_.values[v].sharding) applyAnnotation(static_cast<ValueId>(v), *graph_.values[v].sharding);
    for (OpId id : graph_.order) {
      const Op& op = graph_.op(id);
      if (op.parallel.hasSharding && in_.rules[id]) {
        int64_t priority = op.annotation.priority.value_or(0);
        const OpParallelState& p = op.parallel;
        int k = 0;
        for (const Operand& o : op.operands) {
          if (!o.isValue()) continue;
          TensorLayout l = operandLayout(*in_.rules[id], p.sharding, k++, graph_.value(o.value).type.shape);
          fixTensor(o.value, onMesh(l), priority);
        }
      }
      for (size_t r = 0; r < op.annotation.outputSharding.size() && r < op.results.size(); ++r)
        if (op.annotation.outputSharding[r]) applyAnnotation(op.results[r], *op.annotation.outputSharding[r]);
    }
  }

  void run(FactorStrategy strategy) {
    std::set<int64_t> priorities;
    for (const auto& t : state_)
      for (const auto& d : t.dims) priorities.insert(d.priority);
    // User priorities: dims of priority p > 0 start frozen empty and closed.
    for (auto& t : state_)
      for (auto& d : t.dims)
        if (d.priority > 0) d.frozen = true;
    std::vector<std::pair<std::vector<int>, ValueId>> saved;
    for (int64_t p : priorities) {
      for (size_t v = 0; v < state_.size(); ++v)
        for (auto& d : state_[v].dims)
          if (d.priority == p) d.frozen = false;
      if (strategy == FactorStrategy::BasicThenAggressive) {
        runLevels(true);
        runLevels(false);
      } else {
        runLevels(strategy == FactorStrategy::Basic);
      }
    }
  }

  void readOff() {
    for (OpId id : graph_.order) {
      Op& op = graph_.op(id);
      if (op.parallel.hasSharding || !in_.rules[id]) continue;
      const OpRule& rule = *in_.rules[id];
      OpSharding s;
      s.mesh = mesh_;
      s.layoutForm = graph_.parallel.mesh.has_value();
      s.factorAxes.assign(rule.factorCount(), {});
      s.requestedOutputs.assign(rule.results.size(), std::nullopt);
      std::vector<bool> axisTaken(mesh_.rank(), false);
      std::vector<ValueId> tensors = tensorsOf(op);
      for (int f = 0; f < rule.factorCount(); ++f) {
        if (rule.isReplicated(f)) continue;
        // Candidates: the factor shardings the tensors carry, scored by the total size of the
        // tensors carrying them; ties to the first carrier's lower index.
        std::vector<std::pair<std::vector<int>, int64_t>> scores;
        std::vector<size_t> firstCarrier;
        for (size_t t = 0; t < tensors.size(); ++t) {
          auto axes = factorAxes(rule, op, t, f);
          if (!axes || axes->empty()) continue;
          auto it = std::find_if(scores.begin(), scores.end(), [&](const auto& e) { return e.first == *axes; });
          if (it == scores.end()) {
            scores.emplace_back(*axes, state_[tensors[t]].elements);
            firstCarrier.push_back(t);
          } else {
            it->second += state_[tensors[t]].elements;
          }
        }
        size_t best = scores.size();
        for (size_t c = 0; c < scores.size(); ++c) {
          bool free = std::none_of(scores[c].first.begin(), scores[c].first.end(), [&](int a) { return axisTaken[a]; });
          if (!free) continue;
          if (best == scores.size() || scores[c].second > scores[best].second) best = c;
        }
        if (best == scores.size()) continue;
        s.factorAxes[f] = scores[best].first;
        for (int a : s.factorAxes[f]) axisTaken[a] = true;
      }
      enforceCompoundOrder(rule, s);
      StrategyOrigin origin;
      origin.kind = OriginKind::Propagated;
      origin.from = "factor propagation";
      assignSharding(op, rule, in_.views[id], s, origin);
    }
    // Inputs and parameters: the fixed point's sharding, recorded for layout inference.
  }

 private:
  TensorLayout onMesh(const TensorLayout& l) {
    // A configured op's layout restated on the propagation mesh (equal in standard form).
    TensorLayout s = l.standardForm();
    TensorLayout m = mesh_.rank() == 0 ? s : TensorLayout{mesh_, l.shape, {}, {}, ReduceOp::Sum};
    std::vector<int> map;
    std::vector<int> nonTrivial;
    for (int a = 0; a < mesh_.rank(); ++a)
      if (mesh_.dims[a] > 1) nonTrivial.push_back(a);
    bool same = s.mesh.dims.size() == nonTrivial.size();
    for (size_t i = 0; same && i < nonTrivial.size(); ++i) same = s.mesh.dims[i] == mesh_.dims[nonTrivial[i]];
    if (!same) return TensorLayout::replicated(mesh_, l.shape);  // not expressible: leave it open
    m.dims.clear();
    for (const auto& axes : s.dims) {
      std::vector<int> out;
      for (int a : axes) out.push_back(nonTrivial[a]);
      m.dims.push_back(out);
    }
    for (int a : s.partialAxes) m.partialAxes.push_back(nonTrivial[a]);
    return m;
  }

  void applyAnnotation(ValueId v, const TensorSharding& sh) {
    TensorState& t = state_[v];
    for (size_t d = 0; d < t.dims.size() && d < sh.dims.size(); ++d) {
      t.dims[d].axes = sh.dims[d];
      t.dims[d].open = d < sh.open.size() && sh.open[d];
      t.dims[d].priority = sh.priority;
    }
    t.partial = sh.partialAxes;
    t.barred.insert(sh.replicatedAxes.begin(), sh.replicatedAxes.end());
  }

  void fixTensor(ValueId v, const TensorLayout& l, int64_t priority) {
    TensorState& t = state_[v];
    for (size_t d = 0; d < t.dims.size() && d < l.dims.size(); ++d) {
      t.dims[d].axes = l.dims[d];
      t.dims[d].open = false;
      t.dims[d].priority = priority;
    }
  }

  std::vector<ValueId> tensorsOf(const Op& op) const {
    std::vector<ValueId> t;
    for (const Operand& o : op.operands)
      if (o.isValue()) t.push_back(o.value);
    t.insert(t.end(), op.results.begin(), op.results.end());
    return t;
  }

  // Tensor t of an op: its operands first, then its results.
  static const DimFactors& dimsOf(const OpRule& rule, size_t t) {
    size_t operands = rule.operands.size();
    return t < operands ? rule.operands[t] : rule.results[t - operands];
  }

  // The axes tensor `t` of the op gives factor f (its dim's axes handed to the dim's factors
  // major to minor), or nullopt when the tensor does not hold f.
  std::optional<std::vector<int>> factorAxes(const OpRule& rule, const Op& op, size_t t, int f) const {
    const DimFactors& dims = dimsOf(rule, t);
    const TensorState& ts = state_[tensorsOf(op)[t]];
    for (size_t d = 0; d < dims.size(); ++d) {
      auto pos = std::find(dims[d].begin(), dims[d].end(), f);
      if (pos == dims[d].end()) continue;
      if (ts.dims[d].frozen) return std::vector<int>{};
      size_t a = 0;
      const auto& axes = ts.dims[d].axes;
      for (int g : dims[d]) {
        std::vector<int> mine;
        int64_t left = rule.factorSizes[g];
        while (a < axes.size() && left % mesh_.dims[axes[a]] == 0 && left > 1) {
          left /= mesh_.dims[axes[a]];
          mine.push_back(axes[a++]);
        }
        if (g == f) return mine;
        if (left > 1) return std::vector<int>{};  // the major factor is not full: no axes for minor ones
      }
    }
    return std::nullopt;
  }

  bool allowed(const OpRule& rule, const Op& op, int f, int level) const {
    if (rule.isReplicated(f)) return false;
    bool elementwise = elementwiseLike(op.type);
    if (level <= 1) {
      if (!elementwise) return false;
      if (level == 0)
        for (const Operand& o : op.operands)
          if (o.isValue() && uses_[o.value].size() > 1) return false;
      return true;
    }
    if (level == 2) return rule.factorKinds[f] == FactorKind::PassThrough;
    return true;
  }

  // One propagation step on an op; returns the tensors it changed.
  std::vector<ValueId> step(OpId id, int level, bool basic) {
    const Op& op = graph_.op(id);
    const OpRule& rule = *in_.rules[id];
    std::vector<ValueId> tensors = tensorsOf(op);
    std::vector<ValueId> changed;
    for (int f = 0; f < rule.factorCount(); ++f) {
      if (!allowed(rule, op, f, level)) continue;
      // Stage A: longest compatible major prefix over the holders.
      std::vector<int> result;
      std::vector<std::pair<size_t, std::vector<int>>> holders;
      for (size_t t = 0; t < tensors.size(); ++t)
        if (auto axes = factorAxes(rule, op, t, f)) holders.emplace_back(t, *axes);
      if (holders.empty()) continue;
      for (const auto& [t, axes] : holders) {
        size_t p = 0;
        while (p < axes.size() && p < result.size() && axes[p] == result[p]) ++p;
        if (p < axes.size() && p < result.size()) result.resize(p);  // they diverge: keep the common prefix
        else if (axes.size() > result.size()) result = axes;
      }
      // Stage B: truncate at the first axis another factor of the op uses, a tensor holds as
      // partial, or that breaks divisibility.
      std::set<int> usedElsewhere;
      for (size_t t = 0; t < tensors.size(); ++t)
        for (int g = 0; g < rule.factorCount(); ++g)
          if (g != f)
            if (auto axes = factorAxes(rule, op, t, g)) usedElsewhere.insert(axes->begin(), axes->end());
      int64_t left = rule.factorSizes[f];
      size_t keep = 0;
      for (; keep < result.size(); ++keep) {
        int a = result[keep];
        bool partialSomewhere = false;
        for (ValueId v : tensors)
          partialSomewhere |= std::find(state_[v].partial.begin(), state_[v].partial.end(), a) != state_[v].partial.end();
        if (usedElsewhere.count(a) || partialSomewhere || left % mesh_.dims[a] != 0) break;
        left /= mesh_.dims[a];
      }
      result.resize(keep);
      // Per tensor: a closed, frozen or barring tensor cannot take the result.
      auto canTake = [&](size_t t, const std::vector<int>& axes) {
        const TensorState& ts = state_[tensors[t]];
        const DimFactors& dims = dimsOf(rule, t);
        for (size_t d = 0; d < dims.size(); ++d)
          if (std::find(dims[d].begin(), dims[d].end(), f) != dims[d].end()) {
            if (!ts.dims[d].open || ts.dims[d].frozen) return false;
            if (dims[d].size() > 1 && dims[d][0] != f) {
              // Minor factor of a merged dim: only once the major ones are full.
              int64_t reached = 1;
              for (int a : ts.dims[d].axes) reached *= mesh_.dims[a];
              int64_t majors = 1;
              for (int g : dims[d]) {
                if (g == f) break;
                majors *= rule.factorSizes[g];
              }
              if (reached < majors) return false;
            }
          }
        for (int a : axes)
          if (ts.barred.count(a)) return false;
        return true;
      };
      if (basic) {
        for (const auto& [t, axes] : holders)
          if (axes.size() < result.size() && !canTake(t, result)) {
            // Basic: a tensor that cannot take it stops the factor for everyone.
            result.resize(axes.size());
          }
      }
      for (const auto& [t, axes] : holders) {
        if (axes.size() >= result.size() || !std::equal(axes.begin(), axes.end(), result.begin())) continue;
        if (!canTake(t, result)) continue;
        writeFactor(rule, op, t, f, result);
        changed.push_back(tensors[t]);
      }
    }
    return changed;
  }

  void writeFactor(const OpRule& rule, const Op& op, size_t t, int f, const std::vector<int>& axes) {
    const DimFactors& dims = dimsOf(rule, t);
    TensorState& ts = state_[tensorsOf(op)[t]];
    for (size_t d = 0; d < dims.size(); ++d) {
      if (std::find(dims[d].begin(), dims[d].end(), f) == dims[d].end()) continue;
      // Rebuild the dim from its factors, major first, with f's new axes.
      std::vector<int> all;
      for (int g : dims[d]) {
        auto mine = g == f ? std::optional(axes) : factorAxes(rule, op, t, g);
        if (mine) all.insert(all.end(), mine->begin(), mine->end());
      }
      ts.dims[d].axes = all;
    }
  }

  void runLevels(bool basic) {
    for (int level = 0; level <= 4; ++level) {
      std::deque<OpId> work(graph_.order.begin(), graph_.order.end());
      std::vector<bool> queued(graph_.ops.size(), true);
      size_t budget = graph_.ops.size() * 64 + 1024;  // shardings only grow, so this never binds
      while (!work.empty() && budget-- > 0) {
        OpId id = work.front();
        work.pop_front();
        queued[id] = false;
        if (!in_.rules[id] || graph_.op(id).parallel.hasSharding) continue;
        for (ValueId v : step(id, level, basic)) {
          const Value& value = graph_.value(v);
          auto enqueue = [&](OpId o) {
            if (!queued[o]) {
              queued[o] = true;
              work.push_back(o);
            }
          };
          if (value.producer != kNoId) enqueue(value.producer);
          for (const Use& u : uses_[v]) enqueue(u.op);
        }
      }
    }
  }

  Graph& graph_;
  const PropagationInput& in_;
  DeviceMatrix mesh_;
  std::vector<std::vector<Use>> uses_;
  std::vector<TensorState> state_;

 public:
  const std::vector<TensorState>& state() const { return state_; }
  const DeviceMatrix& mesh() const { return mesh_; }
};

// The mesh factor propagation works on: the model's named mesh, else the standard form of the
// first configured op's device matrix, else one axis over all devices.
DeviceMatrix propagationMesh(const Graph& graph) {
  if (graph.parallel.mesh) return *graph.parallel.mesh;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (!op.parallel.hasSharding) continue;
    TensorLayout probe{op.parallel.sharding.mesh, {}, {}, {}, ReduceOp::Sum};
    DeviceMatrix m = probe.standardForm().mesh;
    if (m.rank() > 0) return DeviceMatrix::unnamed(m.dims);
  }
  return DeviceMatrix::unnamed({graph.parallel.deviceNum});
}

}  // namespace

bool runFactorPropagation(Graph& graph, const PropagationInput& in, PassContext&) {
  FactorPropagation fp(graph, in, propagationMesh(graph));
  fp.seed();
  fp.run(graph.parallel.factorStrategy);
  fp.readOff();
  // Unannotated inputs and parameters take the fixed point's sharding as their layout.
  for (const auto* list : {&graph.inputs, &graph.parameters})
    for (ValueId v : *list) {
      if (graph.value(v).sharding) continue;
      TensorLayout l = TensorLayout::replicated(fp.mesh(), graph.value(v).type.shape);
      for (size_t d = 0; d < l.dims.size(); ++d) l.dims[d] = fp.state()[v].dims[d].axes;
      graph.value(v).layout = l;
    }
  int64_t devices = graph.parallel.deviceNum;
  finishPropagation(graph, in, [&](const OpRule& r, const OpView&) { return replicatedSharding(r, devices); });
  return true;
}

}  // namespace irc
