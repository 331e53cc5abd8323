// Needs: every op with a rule has a sharding (strategy propagation), and a result it holds apart
// from what its op computes has that layout as its value's. Guarantees: every such op
// knows the layout of each tensor operand as it needs it, of each result as it computes it
// (partial included), its forward ops and each result's layout after them; every input and
// parameter knows the layout it is held in (its annotation, else what its first consumer needs).
#include "passes/layout_inference.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/collective.h"
#include "ops/inserted_ops.h"
#include "ir/layout_notation.h"
#include "ops/op_rule.h"
#include "ops/op_sharding.h"
#include "plan/plan_queries.h"
#include "passes/propagation/propagation_common.h"

namespace irc {

namespace {

// What layout inference decides for one model op.
struct OpLayouts {
  std::vector<TensorLayout> inputs;   // per tensor operand, as the op needs it
  std::vector<TensorLayout> outputs;  // per result, as the op computes it (partial included)
  std::vector<TensorLayout> finals;   // per result, what consumers see
  std::vector<std::optional<TensorLayout>> beforeConversion;
  std::vector<ForwardOp> forwardOps;
  std::string error;  // a constraint the op cannot honour, and where it was written
  SourceLoc errorLoc;

  bool sameAs(const Graph& graph, const Op& op) const {
    const OpParallelState& p = *op.parallel;
    if (!(inputs == p.inputLayouts && outputs == p.outputLayouts && beforeConversion == p.beforeConversion &&
          forwardOps == p.forwardOps))
      return false;
    for (size_t r = 0; r < finals.size(); ++r)
      if (!graph.value(op.results[r]).layout || *graph.value(op.results[r]).layout != finals[r]) return false;
    return true;
  }
  void storeIn(Graph& graph, Op& op) {
    OpParallelState& p = *op.parallel;
    p.inputLayouts = std::move(inputs);
    p.outputLayouts = std::move(outputs);
    for (size_t r = 0; r < finals.size(); ++r) graph.value(op.results[r]).layout = std::move(finals[r]);
    p.beforeConversion = std::move(beforeConversion);
    p.forwardOps = std::move(forwardOps);
    p.layoutsInferred = true;
  }
};

class LayoutInferencePass : public Pass {
 public:
  explicit LayoutInferencePass(const CompileOptions& options) : options_(options) {}
  std::string_view name() const override { return "layout_inference"; }
  std::string_view dumpName() const override { return "tensor_layout"; }
  GraphFacts needs() const override { return {GraphFact::Strategies}; }
  GraphFacts gives() const override { return {GraphFact::Layouts}; }

  PassStatus run(Graph& graph, PassContext& context) override {
    bool changed = false;
    for (OpId id : graph.order) {
      Op& op = graph.op(id);
      if (op.inserted()) continue;
      OpParallelState& p = *op.parallel;
      if (!p.hasSharding || !p.rule) {
        context.diags.error(op.loc, fmt::format("op '{}' has no strategy: layout inference needs strategy propagation first "
                                                "(run the pipeline from the start, or include sharding_propagation in --passes)",
                                                op.name));
        return PassStatus::Failed;
      }
      OpLayouts inferred = inferOpLayouts(graph, op, viewOf(graph, op));
      if (!inferred.error.empty()) {
        context.diags.error(inferred.errorLoc.valid() ? inferred.errorLoc : op.loc, inferred.error);
        return PassStatus::Failed;
      }
      if (p.layoutsInferred && inferred.sameAs(graph, op)) continue;
      inferred.storeIn(graph, op);
      changed = true;
    }
    changed |= inferGraphInputLayouts(graph);
    return changed ? PassStatus::Annotated : PassStatus::Unchanged;
  }

 private:
  OpLayouts inferOpLayouts(const Graph& graph, const Op& op, const OpView& view) const {
    const OpRule& rule = *op.parallel->rule;
    const OpSharding& sharding = op.parallel->sharding;
    OpLayouts l;
    for (size_t k = 0; k < rule.operands.size(); ++k)
      l.inputs.push_back(operandLayout(rule, sharding, static_cast<int>(k), view.operandShapes[k]));
    for (size_t r = 0; r < rule.results.size(); ++r) {
      l.outputs.push_back(resultLayout(rule, sharding, static_cast<int>(r), view.resultShapes[r]));
      auto [seen, before] = layoutConsumersSee(graph, op, static_cast<int>(r), view.resultShapes[r]);
      l.finals.push_back(std::move(seen));
      l.beforeConversion.push_back(std::move(before));
    }
    l.forwardOps = forwardOps(rule, sharding, view);
    keepPartialResults(op, view, l);
    return l;
  }

  // DTensor's Partial() output layout, Shardy's unreduced axes: a constrained result the op
  // computes partial over exactly those axes stays so, without the forward ops; each consumer's
  // redistribution reduces it where it needs it whole (or reduce-scatters it).
  void keepPartialResults(const Op& op, const OpView& view, OpLayouts& l) const {
    const auto& constraints = op.annotation->outputSharding;
    bool kept = false;
    for (size_t r = 0; r < constraints.size() && r < l.outputs.size(); ++r) {
      if (!constraints[r] || constraints[r]->partialAxes.empty() || !options_.mesh) continue;
      TensorLayout wanted = layoutOfSharding(*constraints[r], *options_.mesh, view.resultShapes[r]);
      if (!wanted.sameAs(l.outputs[r])) {
        auto words = [](const TensorLayout& layout) {
          auto p = placementsOf(layout);
          return p ? fmt::format("[{}]", fmt::join(*p, ", ")) : printAliasLayout(layout);
        };
        l.error = fmt::format(
            "the sharding constraint on {} keeps it partial, {}; {} computes it as {}: a result stays "
            "partial only as the op computes it (a MatMul over its split contracted dim, a reduction "
            "over a split dim)",
            op.name, words(wanted), op.name, words(l.outputs[r]));
        l.errorLoc = constraints[r]->loc;
        return;
      }
      l.finals[r] = l.outputs[r];
      l.beforeConversion[r].reset();
      kept = true;
    }
    if (!kept) return;
    for (const ForwardOp& f : l.forwardOps)
      if (!completesPartial(f.step)) {
        l.error = fmt::format("{} completes its result with more than a sum ({}); it cannot stay partial", op.name, f.reason);
        return;
      }
    l.forwardOps.clear();
  }

  // The layout consumers see result `r` in, and where the op converts it right after itself,
  // the layout before that conversion.
  std::pair<TensorLayout, std::optional<TensorLayout>> layoutConsumersSee(const Graph& graph, const Op& op, int r,
                                                                          const Shape& shape) const {
    const OpSharding& sharding = op.parallel->sharding;
    // Completed by the forward ops: whole, or reduce-scattered where out_strategy asks for it.
    TensorLayout seen = finalResultLayout(*op.parallel->rule, sharding, r, shape);
    std::optional<TensorLayout> before;
    // Propagation holds the result in another layout than the op computes (factor propagation's
    // fixed point, a Reshape's consumer) and wrote it as the value's: consumers see that; the op
    // converts right after itself. (Run again, this reads the pass's own earlier answer, which
    // any output constraint below then leaves as it was.)
    const HeapOptional<TensorLayout>& held = graph.value(op.results[r]).layout;
    if (sharding.conversionOf(r) != OpSharding::Conversion::None && held && !held->sameAs(seen)) {
      before = seen;
      seen = *held;
    }
    // An output `sharding` constraint: consumers see it; the op converts right after.
    const auto& constraints = op.annotation->outputSharding;
    if (r < static_cast<int>(constraints.size()) && constraints[r] && options_.mesh) {
      TensorLayout wanted = layoutOfSharding(*constraints[r], *options_.mesh, shape);
      if (!wanted.sameAs(seen)) {
        if (!before) before = seen;
        seen = wanted;
      }
    }
    return {std::move(seen), std::move(before)};
  }

  // Returns true when it changed any input's or parameter's layout.
  bool inferGraphInputLayouts(Graph& graph) const {
    auto uses = computeUses(graph);
    bool changed = false;
    for (const auto* list : {&graph.inputs, &graph.parameters})
      for (ValueId id : *list) {
        Value& v = graph.value(id);
        TensorLayout held = heldLayout(graph, uses, id);
        if (v.layout && *v.layout == held) continue;
        v.layout = std::move(held);
        changed = true;
      }
    return changed;
  }

  // The layout an input or parameter is held in: its annotation, else what its first consumer
  // needs (so that edge needs no redistribution), else replicated.
  TensorLayout heldLayout(const Graph& graph, const std::vector<std::vector<Use>>& uses, ValueId id) const {
    const Value& v = graph.value(id);
    if (v.sharding && options_.mesh) return layoutOfSharding(*v.sharding, *options_.mesh, v.type.shape);
    for (const Use& use : uses[id]) {
      const Op& consumer = graph.op(use.op);
      if (consumer.parallel->layoutsInferred) return optimizerSharded(layoutNeeded(consumer, use.operandIndex), v);
    }
    return TensorLayout::replicated(DeviceMatrix::unnamed({options_.deviceNum}), v.type.shape);
  }

  // MindSpore's optimizer parallel: a trained parameter replicated over some device axes is held
  // split on dim 0 over them too (each rank updates its shard) and gathered before its use. Only
  // where dim 0's slice divides and the parameter reaches the threshold.
  TensorLayout optimizerSharded(TensorLayout need, const Value& v) const {
    if (!options_.training || options_.parallelOptimizerLevel == 0 || v.kind != ValueKind::Parameter || !v.trainable ||
        need.shape.empty())
      return need;
    double bytes = static_cast<double>(numElements(v.type.shape)) * byteSize(v.type.dtype);
    if (bytes < options_.parallelOptimizerThresholdKiB * 1024) return need;
    std::vector<int> free;
    int64_t ways = 1;
    for (int a = 0; a < need.mesh.rank(); ++a) {
      bool used = std::find(need.partialAxes.begin(), need.partialAxes.end(), a) != need.partialAxes.end();
      for (const auto& axes : need.dims) used = used || std::find(axes.begin(), axes.end(), a) != axes.end();
      if (!used && need.mesh.dims[a] > 1) {
        free.push_back(a);
        ways *= need.mesh.dims[a];
      }
    }
    if (free.empty() || need.sliceShape()[0] % ways != 0) return need;
    need.dims[0].insert(need.dims[0].end(), free.begin(), free.end());
    return need;
  }

  CompileOptions options_;
};

}  // namespace

std::unique_ptr<Pass> createLayoutInferencePass(const CompileOptions& options) {
  return std::make_unique<LayoutInferencePass>(options);
}

}  // namespace irc
