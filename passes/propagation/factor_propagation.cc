// The graph walk of Shardy's factor propagation (OpenXLA Shardy's design, spec §6). Tensor shardings live on
// values; each step builds the op's FactorProblem (passes/propagation/factor_sharding.h) from its tensors,
// runs the basic or aggressive strategy and writes back what grew, re-queueing the neighbours.
// Around it: the op-priority levels (each a full fixed point) and the user-priority rounds; then
// every op's sharding is read off its tensors. Where an op computes a result in another layout
// than the result's fixed-point sharding, that sharding is recorded for layout inference, which
// converts the result once right after the op (its forward ops).
//
// Sources: tensor annotations and output constraints (closed but where `open` opens them), and
// configured ops, whose operands *and* results are fixed through the op's rule with the op's
// priority. Configured ops take part in the walk like every other op (their closed tensors do
// not change, but factors flow through them).
//
// Op-priority levels (the seed leaves their edges open; docs/deviations.md): 0 elementwise /
// reshape / transpose ops whose operands have one use; 1 those ops with any use count; 2 every op
// along pass-through factors; 3 and 4 every factor of every op (a split reduction factor makes
// the results partial, completed by an AllReduce).
#include <algorithm>
#include <deque>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "passes/propagation/factor_sharding.h"
#include "ops/int_key.h"
#include "ops/op_family.h"
#include "passes/propagation/sharding_propagation.h"

namespace irc {
namespace {

struct TensorState {
  std::vector<DimSharding> dims;
  std::vector<int> partial;
  std::set<int> barred;  // replicated axes
  int64_t elements = 1;
};

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
    elementwise_.resize(g.ops.size());
    for (size_t id = 0; id < g.ops.size(); ++id) elementwise_[id] = rulesOf(g.ops[id]).elementwiseForPropagation();
    internRuleKeys();
  }

  void seed() {
    for (size_t v = 0; v < graph_.values.size(); ++v)
      if (graph_.values[v].sharding) applyAnnotation(static_cast<ValueId>(v), *graph_.values[v].sharding);
    for (OpId id : graph_.order) {
      const Op& op = graph_.op(id);
      if (op.parallel->hasSharding && in_.rules[id]) seedConfigured(op, *in_.rules[id]);
      for (size_t r = 0; r < op.annotation->outputSharding.size() && r < op.results.size(); ++r)
        if (op.annotation->outputSharding[r]) applyAnnotation(op.results[r], *op.annotation->outputSharding[r]);
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
    for (int64_t p : priorities) {
      for (auto& t : state_)
        for (auto& d : t.dims)
          if (d.priority == p) d.frozen = false;
      lastStep_.assign(graph_.ops.size(), LastStep{});  // thawed dims changed tensors behind the steps' back
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
      if (!in_.rules[id]) continue;
      const OpRule& rule = *in_.rules[id];
      if (!op.parallel->hasSharding) {
        OpSharding s;
        s.mesh = mesh_;
        s.layoutForm = in_.options.mesh.has_value();
        s.factorAxes = resolvedFactors(id, op, rule);
        s.reduceScattered.assign(rule.results.size(), false);
        enforceCompoundOrder(rule, s);
        StrategyOrigin origin;
        origin.kind = OriginKind::Propagated;
        origin.fixedPoint = true;
        assignSharding(op, s, origin);
        recordFixedPointResults(op, rule);
      }
    }
  }

  // Annotations whose open dims received axes hold the grown sharding from here on: layout
  // inference, redistribution, dumps and report all read the annotation.
  void growAnnotations() {
    for (size_t v = 0; v < graph_.values.size(); ++v)
      if (graph_.values[v].sharding) grow(*graph_.values[v].sharding, static_cast<ValueId>(v));
    for (OpId id : graph_.order) {
      Op& op = graph_.op(id);
      if (!op.annotation.written()) continue;  // nothing configured (reading would make one)
      for (size_t r = 0; r < op.annotation->outputSharding.size() && r < op.results.size(); ++r)
        if (op.annotation->outputSharding[r]) grow(*op.annotation->outputSharding[r], op.results[r]);
    }
  }

 private:
  void grow(TensorSharding& sharding, ValueId v) {
    for (size_t d = 0; d < sharding.dims.size() && d < state_[v].dims.size(); ++d) sharding.dims[d] = state_[v].dims[d].axes;
  }

  // Where the fixed point gives a result another layout than the op computes, the op converts
  // it right after itself (once, for every consumer). Configured ops' results were seeded from
  // their own rule, so only propagated ops can disagree.
  void recordFixedPointResults(Op& op, const OpRule& rule) {
    OpSharding& s = op.parallel->sharding;
    s.conversions.assign(rule.results.size(), OpSharding::Conversion::None);
    for (size_t r = 0; r < rule.results.size(); ++r) {
      ValueId v = op.results[r];
      TensorLayout computed = resultLayout(rule, s, static_cast<int>(r), graph_.value(v).type.shape);
      computed.partialAxes.clear();
      TensorLayout fixedPoint = layoutOfState(v);
      if (fixedPoint.sameAs(computed)) continue;
      s.conversions[r] = OpSharding::Conversion::FactorFixedPoint;
      graph_.value(v).layout = std::move(fixedPoint);
    }
  }

  TensorLayout layoutOfState(ValueId v) const {
    TensorLayout l = TensorLayout::replicated(mesh_, graph_.value(v).type.shape);
    for (size_t d = 0; d < l.dims.size(); ++d) l.dims[d] = state_[v].dims[d].axes;
    return l;
  }

  TensorLayout onMesh(const TensorLayout& l) {
    // A configured op's layout restated on the propagation mesh (equal in standard form).
    TensorLayout s = l.standardForm();
    TensorLayout m = mesh_.rank() == 0 ? s : TensorLayout{mesh_, l.shape, {}, {}, ReduceOp::Sum};
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
    return m;
  }

  // A configured op fixes its operands and (through its rule) its results, closed, with its
  // priority.
  void seedConfigured(const Op& op, const OpRule& rule) {
    int64_t priority = op.annotation->priority.value_or(0);
    const OpParallelState& p = *op.parallel;
    int k = 0;
    for (const Operand& o : op.operands) {
      if (!o.isValue()) continue;
      fixTensor(o.value, onMesh(operandLayout(rule, p.sharding, k++, graph_.value(o.value).type.shape)), priority);
    }
    for (size_t r = 0; r < op.results.size() && r < rule.results.size(); ++r) {
      TensorLayout l = resultLayout(rule, p.sharding, static_cast<int>(r), graph_.value(op.results[r]).type.shape);
      l.partialAxes.clear();  // completed by the op's forward AllReduce
      fixTensor(op.results[r], onMesh(l), priority);
    }
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
      // An annotation on the same tensor with a higher priority (lower number) keeps its dims.
      if (!t.dims[d].open && t.dims[d].priority < priority) continue;
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

  bool holdsAnyAxis(const Op& op) const {
    auto holds = [&](ValueId v) {
      for (const DimSharding& d : state_[v].dims)
        if (!d.axes.empty()) return true;
      return false;
    };
    for (const Operand& o : op.operands)
      if (o.isValue() && holds(o.value)) return true;
    return std::any_of(op.results.begin(), op.results.end(), holds);
  }

  FactorProblem problemOf(OpId id, const Op& op, const OpRule& rule) const {
    FactorProblem p;
    p.meshDims = mesh_.dims;
    p.factorSizes = rule.factorSizes;
    p.allowed.assign(rule.factorCount(), true);
    for (int f = 0; f < rule.factorCount(); ++f) p.replicated.push_back(rule.isReplicated(f));
    p.elementwise = elementwise_[id];
    std::vector<ValueId> tensors = tensorsOf(op);
    for (size_t t = 0; t < tensors.size(); ++t) {
      const TensorState& s = state_[tensors[t]];
      FactorTensor ft;
      ft.dimFactors = t < rule.operands.size() ? rule.operands[t] : rule.results[t - rule.operands.size()];
      ft.dims = s.dims;
      ft.partial = s.partial;
      ft.barred = s.barred;
      ft.elements = s.elements;
      p.tensors.push_back(std::move(ft));
    }
    return p;
  }

  bool operandWithManyUses(const Op& op) const {
    for (const Operand& o : op.operands)
      if (o.isValue() && uses_[o.value].size() > 1) return true;
    return false;
  }

  // Level 0 also needs operands of one use each (step checks that once for all factors).
  bool allowed(const OpRule& rule, OpId id, int f, int level) const {
    if (rule.isReplicated(f)) return false;
    if (level <= 1) return elementwise_[id];
    if (level == 2) return rule.factorKinds[f] == FactorKind::PassThrough;
    return true;
  }

  // One propagation step on an op; returns the values it changed.
  std::vector<ValueId> step(OpId id, int level, bool basic) {
    const Op& op = graph_.op(id);
    const OpRule& rule = *in_.rules[id];
    std::vector<bool>& allowedFactors = allowedScratch_;  // reused: a sweep asks every op
    allowedFactors.assign(rule.factorCount(), false);
    bool anyAllowed = false;
    if (level > 0 || !operandWithManyUses(op))
      for (int f = 0; f < rule.factorCount(); ++f) {
        bool a = allowed(rule, id, f, level);
        allowedFactors[f] = a;
        anyAllowed |= a;
      }
    // Most steps of a sweep change nothing, and those are answered without building the op's
    // problem: no factor may move at this level; no tensor of the op holds an axis to move
    // (propagation only spreads axes some tensor holds); or the op already took a step with
    // the same factors and algorithm and none of its tensors changed since (a step's result is
    // a function of those alone, and each level runs to a fixed point: level 4 repeats level
    // 3's factors, level 1 level 0's for ops whose operands have one use).
    if (!anyAllowed || !holdsAnyAxis(op)) return {};
    LastStep& last = lastStep_[id];
    if (last.valid && last.basic == basic && last.allowed == allowedFactors) return {};
    last.valid = true;
    last.basic = basic;
    last.allowed = allowedFactors;
    // A step is a function of its problem: ops of repeated layers ask the same one.
    const IntKey& key = stepKey(id, op, allowedFactors, basic);
    auto answer = stepCache_.find(key);
    if (answer == stepCache_.end()) {
      FactorProblem problem = problemOf(id, op, rule);
      problem.allowed = allowedFactors;
      StepChanges changes;
      for (size_t t : basic ? propagateBasic(problem) : propagateAggressive(problem))
        changes.emplace_back(t, problem.tensors[t].dims);
      if (stepCache_.size() >= kStepCacheLimit) stepCache_.clear();  // a model with no repeats: memory stays bounded
      answer = stepCache_.emplace(key, std::move(changes)).first;
    }
    std::vector<ValueId> tensors = tensorsOf(op);
    std::vector<ValueId> out;
    for (const auto& [t, dims] : answer->second) {
      state_[tensors[t]].dims = dims;
      out.push_back(tensors[t]);
    }
    return out;
  }

  // The axes of each factor at the fixed point (resolveFactorShardings of the op's problem),
  // computed once per distinct problem: ops of repeated layers end in the same one.
  std::vector<std::vector<int>> resolvedFactors(OpId id, const Op& op, const OpRule& rule) {
    const IntKey& key = stepKey(id, op, std::vector<bool>(rule.factorCount(), true), false);
    auto it = resolvedCache_.find(key);
    if (it == resolvedCache_.end()) {
      if (resolvedCache_.size() >= kStepCacheLimit) resolvedCache_.clear();
      it = resolvedCache_.emplace(key, resolveFactorShardings(problemOf(id, op, rule))).first;
    }
    return it->second;
  }

  // The part of a step's problem that comes from the op's rule (factor sizes, which are
  // replicated, each tensor's dim factors) and whether it is elementwise, as one number per op:
  // ops with equal parts share it, so step keys carry an id instead of the rule.
  void internRuleKeys() {
    std::unordered_map<IntKey, int64_t, IntKeyHash> ids;
    ruleKey_.assign(graph_.ops.size(), -1);
    IntKey key;
    for (OpId id : graph_.order) {
      if (!in_.rules[id]) continue;
      const OpRule& rule = *in_.rules[id];
      const Op& op = graph_.op(id);
      key.assign({static_cast<int64_t>(elementwise_[id])});
      appendList(key, rule.factorSizes);
      for (int f = 0; f < rule.factorCount(); ++f) key.push_back(rule.isReplicated(f));
      size_t tensors = 0;
      forEachTensor(op, [&](ValueId) {
        const DimFactors& dimFactors =
            tensors < rule.operands.size() ? rule.operands[tensors] : rule.results[tensors - rule.operands.size()];
        key.push_back(static_cast<int64_t>(dimFactors.size()));
        for (const auto& factors : dimFactors) appendList(key, factors);
        ++tensors;
      });
      key.push_back(static_cast<int64_t>(tensors));
      ruleKey_[id] = ids.emplace(key, static_cast<int64_t>(ids.size())).first->second;
    }
  }

  // The op's operand values, then its results: the order of problemOf's tensors.
  template <typename F>
  static void forEachTensor(const Op& op, F&& f) {
    for (const Operand& o : op.operands)
      if (o.isValue()) f(o.value);
    for (ValueId r : op.results) f(r);
  }

  // Everything problemOf puts in the op's problem but the mesh (the same for every op), with the
  // step's factors and algorithm. Built in a buffer reused by every step (sweeps ask hundreds of
  // thousands); valid until the next call.
  const IntKey& stepKey(OpId id, const Op& op, const std::vector<bool>& allowedFactors, bool basic) {
    IntKey& key = keyScratch_;
    key.assign({basic, ruleKey_[id]});
    appendList(key, allowedFactors);
    forEachTensor(op, [&](ValueId v) {
      const TensorState& s = state_[v];
      key.push_back(static_cast<int64_t>(s.dims.size()));
      for (const DimSharding& d : s.dims) {
        appendList(key, d.axes);
        key.insert(key.end(), {d.open, d.frozen, d.priority});
      }
      appendList(key, s.partial);
      appendList(key, s.barred);
      key.push_back(s.elements);
    });
    return key;
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
        if (!in_.rules[id]) continue;
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
          if (value.producer != kNoId) lastStep_[value.producer].valid = false;
          for (const Use& u : uses_[v]) lastStep_[u.op].valid = false;
        }
      }
    }
  }

  Graph& graph_;
  const PropagationInput& in_;
  DeviceMatrix mesh_;
  std::vector<std::vector<Use>> uses_;
  std::vector<TensorState> state_;
  std::vector<bool> elementwise_;  // per op (looked up once: steps ask for every factor)
  // Per op, its last step's factors and algorithm while none of its tensors has changed since.
  struct LastStep {
    bool valid = false;
    bool basic = false;
    std::vector<bool> allowed;
  };
  std::vector<LastStep> lastStep_;
  std::vector<int64_t> ruleKey_;  // per op: its rule's part of step keys (internRuleKeys)
  IntKey keyScratch_;
  std::vector<bool> allowedScratch_;
  // Answers of steps by their problem (stepKey): the tensors that grew, with their new dims.
  using StepChanges = std::vector<std::pair<size_t, std::vector<DimSharding>>>;
  static constexpr size_t kStepCacheLimit = size_t{1} << 16;
  std::unordered_map<IntKey, StepChanges, IntKeyHash> stepCache_;
  std::unordered_map<IntKey, std::vector<std::vector<int>>, IntKeyHash> resolvedCache_;
};

// The mesh factor propagation works on: the model's named mesh, else the standard form of the
// first configured op's device matrix, else one axis over all devices.
DeviceMatrix propagationMesh(const Graph& graph, const CompileOptions& options) {
  if (options.mesh) return *options.mesh;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (!op.parallel->hasSharding) continue;
    TensorLayout probe{op.parallel->sharding.mesh, {}, {}, {}, ReduceOp::Sum};
    DeviceMatrix m = probe.standardForm().mesh;
    if (m.rank() > 0) return DeviceMatrix::unnamed(m.dims);
  }
  return DeviceMatrix::unnamed({options.deviceNum});
}

}  // namespace

void runFactorPropagation(Graph& graph, const PropagationInput& in) {
  FactorPropagation fp(graph, in, propagationMesh(graph, in.options));
  fp.seed();
  fp.run(in.options.factorStrategy);
  fp.readOff();
  fp.growAnnotations();
  // Unannotated inputs and parameters are left to layout inference: each is held in the layout
  // its first consumer computes with, so that edge needs no redistribution.
  int64_t devices = in.options.deviceNum;
  finishPropagation(graph, in, [&](OpId, const OpRule& r, const OpView&) { return replicatedSharding(r, devices); });
}

}  // namespace irc
