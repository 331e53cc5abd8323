// Needs: layout inference (every op knows the layouts it needs and produces, inputs and
// parameters the layout they are held in). Guarantees: right after every op its forward ops
// (AllReduce / ReduceScatter, RealDiv), shared by all consumers; right before every consumer,
// for each operand whose layout differs from what it needs, the redistribution sequence; every
// inserted op named deterministically, with its step and a reason; one record per edge.
#include "passes/redistribution.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "ir/layout_notation.h"
#include "ir/limits.h"
#include <fmt/ranges.h>

#include "ops/inserted_ops.h"
#include "ir/int_text.h"
#include "plan/plan_queries.h"
#include "ops/op_family.h"
#include "ops/int_key.h"
#include "ops/op_inserter.h"
#include "ops/collective.h"
#include "ops/step_emission.h"
#include "plan/optimal_planner.h"
#include "cost/step_cost.h"
#include "plan/redistribution_planner.h"

namespace irc {
namespace {

class RedistributionPass : public Pass {
 public:
  // The plan from one layout to another with the model's planner.
  explicit RedistributionPass(const CompileOptions& options) : options_(options) {}

  RedistPlan plan(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options) const {
    return planWithSettings(from, to, options, options_);
  }

  // A plan's steps, each held by the ops that perform it.
  using SharedSteps = std::vector<std::shared_ptr<const RedistStep>>;
  // The steps of an edge's plan, computed once per distinct (from, to, element size): the layers
  // of a model repeat, so most edges ask what an edge of an earlier layer asked. The key holds
  // every field of both layouts as they are (mesh names interned), not their standard forms: a
  // plan's steps carry the layouts' own mesh and axes.
  const SharedSteps& memoizedPlan(const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options) {
    planKey_.clear();
    appendExactLayout(planKey_, from);
    appendExactLayout(planKey_, to);
    planKey_.push_back(options.enableAlltoall);
    planKey_.push_back(options.dtypeBytes);
    auto it = plans_.find(planKey_);
    if (it == plans_.end()) {
      RedistPlan planned = plan(from, to, options);
      SharedSteps steps;
      for (RedistStep& step : planned.steps) steps.push_back(std::make_shared<const RedistStep>(std::move(step)));
      it = plans_.emplace(planKey_, std::move(steps)).first;
    }
    return it->second;
  }

  std::string_view name() const override { return "redistribution"; }
  std::string_view dumpName() const override { return "step_parallel_end"; }
  GraphFacts needs() const override { return {GraphFact::Layouts}; }
  GraphFacts gives() const override { return {GraphFact::Communication}; }

  PassStatus run(Graph& graph, PassContext& context) override {
    if (!readyForRedistribution(graph, context)) return PassStatus::Failed;
    PlannerOptions options{options_.enableAlltoall, 4};
    OpInserter ins(graph);
    std::vector<ValueId> current(graph.values.size());
    for (size_t v = 0; v < current.size(); ++v) current[v] = static_cast<ValueId>(v);
    std::vector<OpId> modelOrder = graph.order;
    graph.redistributions.clear();
    OpId at = kNoId;
    try {
      for (OpId id : modelOrder) {
        at = id;
        insertAround(graph, ins, id, current, options);
      }
    } catch (const InsertionLimitReached&) {
      context.diags.error(graph.op(at).loc, fmt::format("redistributing around op '{}' would take the compile past {} inserted "
                                                        "nodes (docs/limits.md); use fewer devices or a strategy that "
                                                        "needs less redistribution",
                                                        graph.op(at).name, kMaxInsertedNodes));
      return PassStatus::Failed;
    }
    for (ValueId& out : graph.outputs) out = current[out];
    graph.order = std::move(ins.order);
    // Every layout already fit: the graph is as it was (no op, no rename, no record).
    return ins.insertedCount() == 0 ? PassStatus::Unchanged : PassStatus::Changed;
  }

 private:
  // The redistributions before op `id`, the op itself, and its forward ops.
  void insertAround(Graph& graph, OpInserter& ins, OpId id, std::vector<ValueId>& current, PlannerOptions& options) {
    {
      // Before the op: one redistribution per operand whose layout is not what it needs.
      // Emitting appends to graph.ops and graph.values: no reference into them is used after it.
      for (size_t i = 0; i < graph.op(id).operands.size(); ++i) {
        const Operand& operand = graph.op(id).operands[i];
        if (!operand.isValue()) continue;
        ValueId original = operand.value;
        // Most edges fit and most operands are no training parameter: nothing to copy then.
        bool mirrored = options_.training && graph.value(original).kind == ValueKind::Parameter;
        if (!mirrored && layoutOfValue(graph, original).sameAs(layoutNeeded(graph.op(id), static_cast<int>(i)))) {
          graph.op(id).operands[i].value = current[original];
          continue;
        }
        const Value v = graph.value(original);  // a copy: inserting ops appends to graph.values
        TensorLayout from = layoutOfValue(graph, original);
        const Op& op = graph.op(id);
        TensorLayout to = layoutNeeded(op, static_cast<int>(i));
        ValueId input = current[original];
        if (!from.sameAs(to)) {
          ins.setOwner(id, InsertedRole::Redistribution);
          options.dtypeBytes = byteSize(v.type.dtype);
          const SharedSteps& steps = memoizedPlan(from, to, options);
          RedistributionRecord rec;
          rec.value = original;
          rec.producer = v.producer == kNoId ? v.name : graph.op(v.producer).name;
          rec.consumer = op.name;
          rec.inputIndex = static_cast<int>(i);
          rec.from = from;
          rec.to = to;
          std::string consumerName = op.name;
          int counter = 0;
          auto names = [&](const std::string& type) {
            int k = counter++;
            return std::make_pair(text::concat(consumerName, ".in", i, ".redistribution_op.", k),
                                  text::concat("redistribution_op_", rec.producer, "_", consumerName, "_", k, type));
          };
          size_t before = ins.order.size();
          for (size_t k = 0; k < steps.size(); ++k) {
            const RedistStep& step = *steps[k];
            std::string reason = k > 0 && k + 1 == steps.size() && isLocalReshape(step)
                                     ? fmt::format("reshape the local tensor back to {}", formatShape(step.localAfter))
                                     : stepReason(step, consumerName, static_cast<int>(i), rec.producer);
            rec.reasons.push_back(reason);
            input = emitStep(ins, steps[k], input, v.type.dtype, reason, names);
          }
          rec.ops.assign(ins.order.begin() + before, ins.order.end());
          rec.reason = rec.reasons.empty() ? "" : rec.reasons.front();
          for (const auto& r : rec.reasons)
            if (r.rfind("reshape", 0) != 0) {
              rec.reason = r;
              break;
            }
          graph.redistributions.push_back(std::move(rec));
        }
        ins.setOwner(id, InsertedRole::Mirror);
        // A constant that does not train (an export's buffer or folded mask) takes no gradient
        // to average: torch's data parallelism all-reduces parameters' gradients only.
        if (options_.training && v.kind == ValueKind::Parameter && v.trainable)
          input = emitMirror(ins, to, input, v, graph.op(id).name, static_cast<int>(i), options_.parallelOptimizerLevel > 0);
        graph.op(id).operands[i].value = input;
      }
      // The op's replace graph, where its family has one (a masked lookup, a class offset).
      const OpFamilyRules& family = rulesOf(graph.op(id));
      ReplaceGraph replace;
      ins.setOwner(id, InsertedRole::ReplaceGraph);
      family.insertBefore(graph, ins, id, replace);
      ins.order.push_back(id);
      ValueId result = graph.op(id).results.empty() ? kNoId : graph.op(id).results[0];
      if (result != kNoId) current[result] = family.insertAfter(graph, ins, id, replace, result);
      ins.setOwner(id, InsertedRole::ForwardOp);
      emitForwardOps(graph, ins, id, current);
    }
  }

  // A training graph's _MirrorOperator right before the op (MindSpore's InsertMirrorOps), where
  // the parameter as the op reads it is replicated over more than one rank: the axes of the
  // layout's mesh that split no dim. Forward it is the identity; backward it averages the
  // parameter's gradient over that replica group.
  static ValueId emitMirror(OpInserter& ins, const TensorLayout& as, ValueId input, const Value& param,
                            const std::string& consumer, int operand, bool optimizerParallel) {
    RedistStep mirror = mirrorStep(as);
    if (mirror.groupSize() <= 1) return input;
    auto names = [&](const std::string&) {
      return std::make_pair(fmt::format("{}.in{}.mirror_op.0", consumer, operand),
                            fmt::format("mirror_op_{}_{}_0", param.name, consumer));
    };
    // Optimizer parallel: the parameter is held split over those ranks, and its gradient goes
    // back to the shards by a ReduceScatter.
    mirror.shardedGradient = optimizerParallel && param.layout && param.layout->sliceShape() != as.sliceShape();
    std::string reason = fmt::format("{} reads {} replicated over {} ({} ranks hold each slice): in training its gradient is {}",
                                     consumer, param.name, axisText(mirror), mirror.groupSize(),
                                     mirror.shardedGradient
                                         ? "reduce-scattered onto the shards each rank updates (optimizer parallel)"
                                         : fmt::format("averaged over them by an {}", collectiveName(CollectiveKind::AllReduce)));
    return emitStep(ins, std::make_shared<const RedistStep>(std::move(mirror)), input, param.type.dtype, reason, names);
  }

  // Right after the op: what completes its partial results, shared by all consumers.
  void emitForwardOps(Graph& graph, OpInserter& ins, OpId id, std::vector<ValueId>& current) {
    const OpParallelState& p = *std::as_const(graph).op(id).parallel;
    bool converts =
        std::any_of(p.beforeConversion.begin(), p.beforeConversion.end(), [](const auto& l) { return l.has_value(); });
    int counter = 0;
    if (converts && emitReduceScatter(graph, ins, id, current, counter)) return;
    // (Most ops have neither: they are not copied then. Emitting appends to graph.ops, so the
    // emitters work on copies of what they read.)
    if (!p.forwardOps.empty()) emitReductions(graph, ins, id, current, counter);
    if (converts) emitConstraints(graph, ins, id, current, counter);
  }

  // A partial result whose constraint splits a dim over the axes it is partial on (DTensor's
  // RowwiseParallel with output_layouts Shard(1), MindSpore's reduce-scattered MatMul output):
  // the AllReduce and the StridedSlice after it are one ReduceScatter, as both frameworks run it.
  bool emitReduceScatter(Graph& graph, OpInserter& ins, OpId id, std::vector<ValueId>& current, int& counter) {
    const OpParallelState& p = *std::as_const(graph).op(id).parallel;
    if (p.forwardOps.size() != 1 || !completesPartial(p.forwardOps[0].step) || p.beforeConversion.size() != 1 ||
        !p.beforeConversion[0])
      return false;
    // Only the user's constraint: factor propagation's own fixed points keep Shardy's AllReduce
    // and slice (conformance with its worked examples).
    const auto& constraints = std::as_const(graph).op(id).annotation->outputSharding;
    if (constraints.empty() || !constraints[0]) return false;
    const ValueId result = graph.op(id).results[0];
    const Value v = graph.value(result);
    const SharedSteps& steps = memoizedPlan(*p.beforeConversion[0], *v.layout, {options_.enableAlltoall, byteSize(v.type.dtype)});
    if (steps.size() != 1) return false;
    std::optional<RedistStep> fused = fuseReduceThenSlice(p.forwardOps[0].step, *steps[0], p.outputLayouts[0].sliceShape());
    if (!fused) return false;
    RedistStep step = std::move(*fused);
    const std::string opName = graph.op(id).name;
    auto names = [&](const std::string&) {
      int k = counter++;
      return std::make_pair(text::concat(opName, ".forward_op.", k), text::concat("forward_op_", opName, "_", k));
    };
    std::string reason = fmt::format("the sharding constraint on {}: {}", v.name, stepReason(step, opName, 0, opName));
    current[result] =
        emitStep(ins, std::make_shared<const RedistStep>(std::move(step)), current[result], v.type.dtype, reason, names);
    return true;
  }

  // The op's output `sharding` constraints: convert each constrained result to its layout.
  void emitConstraints(Graph& graph, OpInserter& ins, OpId id, std::vector<ValueId>& current, int& counter) {
    const OpParallelState p = *std::as_const(graph).op(id).parallel;
    const std::string opName = graph.op(id).name;
    const std::vector<ValueId> results = graph.op(id).results;
    for (size_t r = 0; r < p.beforeConversion.size(); ++r) {
      if (!p.beforeConversion[r]) continue;
      const Value v = graph.value(results[r]);
      PlannerOptions options{options_.enableAlltoall, byteSize(v.type.dtype)};
      const SharedSteps& steps = memoizedPlan(*p.beforeConversion[r], *v.layout, options);
      auto names = [&](const std::string&) {
        int k = counter++;
        return std::make_pair(text::concat(opName, ".forward_op.", k), text::concat("forward_op_", opName, "_", k));
      };
      ValueId input = current[results[r]];
      // Why the result is converted: the user's constraint on it, or factor propagation's
      // fixed point, which holds the tensor in another sharding than the op computes.
      const auto& constraints = std::as_const(graph).op(id).annotation->outputSharding;
      bool constrained = r < constraints.size() && constraints[r];
      std::string why = constrained ? fmt::format("the sharding constraint on {}", v.name)
                        : p.sharding.conversionOf(r) == OpSharding::Conversion::ReshapeConsumer
                            ? fmt::format("{} hands its consumer the layout it needs (MindSpore's ReshapeInfo)", opName)
                            : fmt::format("factor propagation holds {} as {}; {} computes it as {}", v.name,
                                          printAliasLayout(*v.layout), opName, printAliasLayout(*p.beforeConversion[r]));
      for (const auto& step : steps)
        input = emitStep(ins, step, input, v.type.dtype, fmt::format("{}: {}", why, stepReason(*step, opName, 0, opName)), names);
      current[results[r]] = input;
    }
  }

  static void emitReductions(Graph& graph, OpInserter& ins, OpId id, std::vector<ValueId>& current, int& counter) {
    const OpParallelState p = *std::as_const(graph).op(id).parallel;
    std::string opName = graph.op(id).name;
    ValueId result = graph.op(id).results[0];
    const Value v = graph.value(result);  // a copy: inserting ops appends to graph.values
    DType dtype = v.type.dtype;
    Shape local = p.outputLayouts[0].sliceShape();
    ValueId input = current[result];  // after a masked lookup, its Mul
    auto names = [&](const std::string&) {
      int k = counter++;
      return std::make_pair(text::concat(opName, ".forward_op.", k), text::concat("forward_op_", opName, "_", k));
    };
    for (const ForwardOp& f : p.forwardOps) {
      RedistStep step = f.step;
      step.localBefore = local;
      step.globalAfter = v.type.shape;
      local = forwardStepLocalAfter(step, local);
      step.localAfter = local;
      input = emitStep(ins, std::make_shared<const RedistStep>(std::move(step)), input, dtype, f.reason, names);
    }
    current[result] = input;
  }

  void appendExactLayout(IntKey& key, const TensorLayout& l) {
    appendList(key, l.mesh.dims);
    key.push_back(static_cast<int64_t>(l.mesh.names.size()));
    for (const std::string& name : l.mesh.names)
      key.push_back(meshNames_.emplace(name, static_cast<int64_t>(meshNames_.size())).first->second);
    appendList(key, l.shape);
    key.push_back(static_cast<int64_t>(l.dims.size()));
    for (const auto& axes : l.dims) appendList(key, axes);
    appendList(key, l.partialAxes);
    key.push_back(static_cast<int64_t>(l.partialOp));
  }

  CompileOptions options_;
  std::unordered_map<IntKey, SharedSteps, IntKeyHash> plans_;
  std::unordered_map<std::string, int64_t> meshNames_;
  IntKey planKey_;
};

}  // namespace

bool readyForRedistribution(const Graph& graph, PassContext& context) {
  for (OpId id : graph.order)
    if (graph.op(id).inserted()) {
      context.diags.error({}, "redistribution already ran on this graph");
      return false;
    }
  for (OpId id : graph.order)
    if (!graph.op(id).parallel->layoutsInferred && !graph.op(id).inserted()) {
      context.diags.error(graph.op(id).loc,
                          fmt::format("op '{}' has no layouts: redistribution needs layout_inference first", graph.op(id).name));
      return false;
    }
  return true;
}

std::unique_ptr<Pass> createRedistributionPass(const CompileOptions& options) {
  return std::make_unique<RedistributionPass>(options);
}

}  // namespace irc
