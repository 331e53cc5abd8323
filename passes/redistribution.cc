// Needs: layout inference (every op knows the layouts it needs and produces, inputs and
// parameters the layout they are held in). Guarantees: right after every op its forward ops
// (AllReduce / ReduceScatter, RealDiv), shared by all consumers; right before every consumer,
// for each operand whose layout differs from what it needs, the redistribution sequence; every
// inserted op named deterministically, with its step and a reason; one record per edge.
#include "passes/redistribution.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "ir/layout_notation.h"
#include "ir/limits.h"
#include <fmt/ranges.h>

#include "ir/inserted_ops.h"
#include "passes/layout_inference.h"
#include "passes/optimal_planner.h"
#include "passes/redistribution_planner.h"

namespace irc {
namespace {

std::string axisText(const RedistStep& s) {
  std::vector<int> fromRight;
  for (int a : s.axes) fromRight.push_back(s.mesh.rank() - 1 - a);
  std::sort(fromRight.begin(), fromRight.end());
  return fmt::format("device axis {}", fmt::join(fromRight, ", "));
}

struct InsertionLimitReached {};

class Inserter {
 public:
  explicit Inserter(Graph& g) : graph_(g) {}

  // Appends an inserted op reading `input`; returns its (first) result.
  ValueId add(std::string name, std::string instance, std::string type, std::vector<Operand> operands, AttrMap attrs,
              std::vector<TensorType> results, std::optional<RedistStep> step, std::string reason) {
    // A bound on the work (docs/limits.md): a gather over a million ranks on a dim other than 0
    // would otherwise write a Split with a million outputs into every dump.
    if (++inserted_ > kMaxInsertedNodes) throw InsertionLimitReached{};
    Op op;
    op.name = std::move(name);
    op.instanceName = std::move(instance);
    op.type = std::move(type);
    op.operands = std::move(operands);
    op.attrs = std::move(attrs);
    op.step = std::move(step);
    op.reason = std::move(reason);
    OpId id = graph_.addOp(std::move(op), results);
    materializeForRank(graph_.op(id), graph_.parallel.globalRank);
    order.push_back(id);
    return graph_.op(id).results[0];
  }

  std::vector<OpId> order;

 private:
  Graph& graph_;
  int64_t inserted_ = 0;
};

AttrMap sliceMasks() {
  return {{"begin_mask", int64_t{0}}, {"ellipsis_mask", int64_t{0}}, {"end_mask", int64_t{0}},
          {"new_axis_mask", int64_t{0}}, {"shrink_axis_mask", int64_t{0}}};
}

// Emits the ops of one step; `name(i, type)` gives the i-th inserted op's names.
ValueId emitStep(Inserter& ins, const RedistStep& step, ValueId input, DType dtype, const std::string& reason,
                 const std::function<std::pair<std::string, std::string>(const std::string&)>& names) {
  TensorType carried{dtype, step.globalAfter};
  std::string type = opTypeOfStep(step);
  // A ReduceScatter on a dim other than 0 starts with the Split that stacks its blocks on dim 0.
  bool stackFirst = step.kind == RedistStep::Kind::ReduceScatter && step.dim > 0;
  auto [name, instance] = names(stackFirst ? "Split" : type);
  switch (step.kind) {
    case RedistStep::Kind::Reshape:
      return ins.add(name, instance, "Reshape", {Operand::ofValue(input), Operand::ofConstant(IntTuple(step.localAfter))}, {},
                     {carried}, step, reason);
    case RedistStep::Kind::Split:
      return ins.add(name, instance, "StridedSlice",
                     {Operand::ofValue(input), Operand::ofConstant(IntTuple{}), Operand::ofConstant(IntTuple{}),
                      Operand::ofConstant(IntTuple{})},
                     sliceMasks(), {carried}, step, reason);
    case RedistStep::Kind::RealDiv:
      return ins.add(name, instance, "RealDiv",
                     {Operand::ofValue(input), Operand::ofConstant(ScalarTensor{dtype, static_cast<double>(step.divisor)})}, {},
                     {carried}, step, reason);
    case RedistStep::Kind::Gather: {
      ValueId gathered = ins.add(name, instance, "AllGather", {Operand::ofValue(input)}, {}, {carried}, step, reason);
      if (step.dim == 0) return gathered;
      // AllGather concatenates on dim 0: Split it back into the members' blocks and concatenate
      // them on the dim the axis left.
      int64_t n = step.groupSize();
      auto [splitName, splitInstance] = names("Split");
      ValueId first = ins.add(splitName, splitInstance, "Split", {Operand::ofValue(gathered)},
                              {{"axis", int64_t{0}}, {"output_num", n}}, std::vector<TensorType>(n, carried), step,
                              fmt::format("AllGather concatenated on dim 0; split it into the {} members' blocks", n));
      std::vector<Operand> parts;
      for (int64_t j = 0; j < n; ++j) parts.push_back(Operand::ofValue(first + static_cast<ValueId>(j)));
      auto [concatName, concatInstance] = names("Concat");
      return ins.add(concatName, concatInstance, "Concat", parts, {{"axis", int64_t{step.dim}}}, {carried}, step,
                     fmt::format("and concatenate the blocks on dim {}", step.dim));
    }
    case RedistStep::Kind::ReduceScatter: {
      if (!stackFirst) return ins.add(name, instance, type, {Operand::ofValue(input)}, {}, {carried}, step, reason);
      // ReduceScatter scatters dim 0: split the local tensor into the members' blocks along the
      // dim and stack them on dim 0 first, so that member i keeps block i of that dim.
      int64_t n = step.groupSize();
      ValueId first = ins.add(name, instance, "Split", {Operand::ofValue(input)}, {{"axis", int64_t{step.dim}}, {"output_num", n}},
                              std::vector<TensorType>(n, carried), step,
                              fmt::format("ReduceScatter scatters dim 0: split dim {} into the {} members' blocks", step.dim, n));
      std::vector<Operand> parts;
      for (int64_t j = 0; j < n; ++j) parts.push_back(Operand::ofValue(first + static_cast<ValueId>(j)));
      auto [concatName, concatInstance] = names("Concat");
      ValueId stacked = ins.add(concatName, concatInstance, "Concat", parts, {{"axis", int64_t{0}}}, {carried}, step,
                                "and stack the blocks on dim 0");
      auto [rsName, rsInstance] = names("ReduceScatter");
      return ins.add(rsName, rsInstance, "ReduceScatter", {Operand::ofValue(stacked)}, {}, {carried}, step, reason);
    }
    default:
      return ins.add(name, instance, type, {Operand::ofValue(input)}, {}, {carried}, step, reason);
  }
}

std::string stepReason(const RedistStep& s, const std::string& consumer, int input, const std::string& producer) {
  int d = s.tensorDim >= 0 ? s.tensorDim : s.dim;
  switch (s.kind) {
    case RedistStep::Kind::Split:
      return fmt::format("{} needs input {} split {} ways on dim {} ({}); it arrives whole on dim {}", consumer, input,
                         s.groupSize(), d, axisText(s), d);
    case RedistStep::Kind::Gather:
      return fmt::format("{} needs input {} whole on dim {} over {}; {} gives it split {} ways", consumer, input, d, axisText(s),
                         producer, s.groupSize());
    case RedistStep::Kind::AlltoAll:
      return fmt::format("{} needs input {} split on dim {} over {}; it arrives split on dim {}: one all-to-all moves it",
                         consumer, input, d, axisText(s), s.concatDim);
    case RedistStep::Kind::Reshape:
      return fmt::format("reshape the local tensor to {} so that each dim holds at most one device axis",
                         formatShape(s.localAfter));
    case RedistStep::Kind::AllReduce:
      return fmt::format("{}'s value is partial over {}: reduce it before redistributing", producer, axisText(s));
    case RedistStep::Kind::ReduceScatter:
      return fmt::format("{}'s value is partial over {} and {} needs input {} split {} ways on dim {}: one reduce-scatter does "
                         "both",
                         producer, axisText(s), consumer, input, s.groupSize(), d);
    default: return "";
  }
}

class RedistributionPass : public Pass {
 public:
  // The plan from one layout to another with the model's planner.
  static RedistPlan plan_(const Graph& graph, const TensorLayout& from, const TensorLayout& to, const PlannerOptions& options) {
    if (graph.parallel.redistribution == RedistributionMode::Optimal)
      return planOptimal(from, to, options, {graph.parallel.alpha, graph.parallel.beta, graph.parallel.gamma});
    return planRedistribution(from, to, options);
  }

  std::string_view name() const override { return "redistribution"; }
  std::string_view dumpName() const override { return "step_parallel_end"; }

  PassStatus run(Graph& graph, PassContext& context) override {
    for (OpId id : graph.order)
      if (graph.op(id).inserted()) {
        context.diags.error({}, "redistribution already ran on this graph");
        return PassStatus::Failed;
      }
    for (OpId id : graph.order)
      if (!graph.op(id).parallel.layoutsInferred && ruleOfKnown(graph.op(id))) {
        context.diags.error(graph.op(id).loc, fmt::format("op '{}' has no layouts: redistribution needs layout_inference first",
                                                          graph.op(id).name));
        return PassStatus::Failed;
      }
    PlannerOptions options{graph.parallel.enableAlltoall, 4};
    if (graph.parallel.redistribution == RedistributionMode::Optimal) fuseReductionsIntoEdges(graph);
    Inserter ins(graph);
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
    return PassStatus::Changed;
  }

 private:
  // The redistributions before op `id`, the op itself, and its forward ops.
  void insertAround(Graph& graph, Inserter& ins, OpId id, std::vector<ValueId>& current, PlannerOptions& options) {
    {
      // Before the op: one redistribution per operand whose layout is not what it needs.
      // Emitting appends to graph.ops and graph.values: no reference into them is used after it.
      for (size_t i = 0; i < graph.op(id).operands.size(); ++i) {
        const Operand& operand = graph.op(id).operands[i];
        if (!operand.isValue()) continue;
        ValueId original = operand.value;
        const Value v = graph.value(original);  // a copy: inserting ops appends to graph.values
        TensorLayout from = layoutOf(graph, original);
        const Op& op = graph.op(id);
        TensorLayout to = op.parallel.inputLayouts[tensorOperandIndex(op, static_cast<int>(i))];
        ValueId input = current[original];
        if (!from.sameAs(to)) {
          options.dtypeBytes = byteSize(v.type.dtype);
          RedistPlan plan = plan_(graph, from, to, options);
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
            return std::make_pair(fmt::format("{}.in{}.redistribution_op.{}", consumerName, i, k),
                                  fmt::format("redistribution_op_{}_{}_{}{}", rec.producer, consumerName, k, type));
          };
          size_t before = ins.order.size();
          for (size_t k = 0; k < plan.steps.size(); ++k) {
            const RedistStep& step = plan.steps[k];
            std::string reason = k > 0 && k + 1 == plan.steps.size() && step.kind == RedistStep::Kind::Reshape
                                     ? fmt::format("reshape the local tensor back to {}", formatShape(step.localAfter))
                                     : stepReason(step, consumerName, static_cast<int>(i), rec.producer);
            rec.reasons.push_back(reason);
            input = emitStep(ins, step, input, v.type.dtype, reason, names);
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
        if (graph.parallel.training && v.kind == ValueKind::Parameter)
          input = emitMirror(ins, to, input, v, graph.op(id).name, static_cast<int>(i));
        graph.op(id).operands[i].value = input;
      }
      std::optional<MaskedLookup> lookup = emitVocabLookupBefore(graph, ins, id);
      ins.order.push_back(id);
      if (lookup) current[graph.op(id).results[0]] = emitVocabLookupAfter(graph, ins, id, *lookup);
      emitForwardOps(graph, ins, id, current);
    }
  }

  static bool ruleOfKnown(const Op& op) { return !op.inserted(); }

  // A training graph's _MirrorOperator right before the op (MindSpore's InsertMirrorOps), where
  // the parameter as the op reads it is replicated over more than one rank: the axes of the
  // layout's mesh that split no dim. Forward it is the identity; backward it averages the
  // parameter's gradient over that replica group.
  static ValueId emitMirror(Inserter& ins, const TensorLayout& as, ValueId input, const Value& param, const std::string& consumer,
                            int operand) {
    RedistStep mirror;
    mirror.kind = RedistStep::Kind::Mirror;
    mirror.mesh = as.mesh;
    for (int a = 0; a < as.mesh.rank(); ++a) {
      bool used = std::any_of(as.dims.begin(), as.dims.end(), [&](const std::vector<int>& axes) {
        return std::find(axes.begin(), axes.end(), a) != axes.end();
      });
      if (!used && as.mesh.dims[a] > 1) mirror.axes.push_back(a);
    }
    if (mirror.groupSize() <= 1) return input;
    mirror.localBefore = mirror.localAfter = as.sliceShape();
    mirror.globalAfter = as.shape;
    auto names = [&](const std::string&) {
      return std::make_pair(fmt::format("{}.in{}.mirror_op.0", consumer, operand),
                            fmt::format("mirror_op_{}_{}_0", param.name, consumer));
    };
    std::string reason = fmt::format("{} reads {} replicated over {} ({} ranks hold each slice): in training its gradient is "
                                     "averaged over them by an AllReduce",
                                     consumer, param.name, axisText(mirror), mirror.groupSize());
    return emitStep(ins, mirror, input, param.type.dtype, reason, names);
  }

  // The optimal planner plans a partial result's reduction together with its one consumer's
  // redistribution (AllReduce + StridedSlice becomes ReduceScatter): such an op keeps no forward
  // op and its value reaches the edge partial. Values with several consumers, graph outputs and
  // ReduceMean (whose RealDiv must follow the sum) keep their forward ops.
  static void fuseReductionsIntoEdges(Graph& graph) {
    auto uses = computeUses(graph);
    std::vector<bool> isOutput(graph.values.size(), false);
    for (ValueId v : graph.outputs) isOutput[v] = true;
    for (OpId id : graph.order) {
      Op& op = graph.op(id);
      OpParallelState& p = op.parallel;
      if (p.forwardOps.size() != 1 || p.forwardOps[0].kind != ForwardOp::Kind::AllReduce || op.type == "Gather") continue;
      ValueId result = op.results[0];
      if (uses[result].size() != 1 || isOutput[result] || p.beforeConstraint[0]) continue;
      p.forwardOps.clear();
      p.finalLayouts[0] = p.outputLayouts[0];  // partial: the edge's plan reduces it
    }
  }

  static TensorLayout layoutOf(const Graph& graph, ValueId v) {
    const Value& value = graph.value(v);
    if (value.producer == kNoId) return *value.layout;
    return graph.op(value.producer).parallel.finalLayouts[value.resultIndex];
  }

  // A Gather whose table rows are split (its reduction factor on axes of size > 1) looks up only
  // the rows the rank holds, masking the rest to zero (spec/ops.md): before it
  // s = Sub(indices, offset), r = ReLU(s), m = Minimum(r, rows - 1), e = Equal(s, m), and it
  // reads m. (Inserting appends to graph.ops: no reference to an op is held across it.)
  struct MaskedLookup {
    ValueId mask;      // e
    int nextIndex;     // the next `.replace.<i>`
  };
  static std::optional<MaskedLookup> emitVocabLookupBefore(Graph& graph, Inserter& ins, OpId id) {
    const Op& op = graph.op(id);
    if (op.type == "OneHot") {
      emitClassOffset(graph, ins, id);
      return std::nullopt;
    }
    if (op.type != "Gather" || op.parallel.forwardOps.empty()) return std::nullopt;
    const TensorLayout& params = op.parallel.inputLayouts[0];
    int64_t axis = std::get<int64_t>(*op.operands[2].constant);
    if (axis < 0) axis += static_cast<int64_t>(params.shape.size());
    std::vector<int> axes;
    for (int a : params.dims[axis])
      if (params.mesh.dims[a] > 1) axes.push_back(a);
    if (axes.empty()) return std::nullopt;
    int64_t rows = params.sliceShape()[axis];
    ValueId indices = op.operands[1].value;
    TensorType indexType = graph.value(indices).type;
    DType idx = indexType.dtype;
    const std::string name = op.name;
    int counter = 0;
    auto next = [&] {
      int k = counter++;
      return std::make_pair(fmt::format("{}.replace.{}", name, k), fmt::format("replace_op_{}_{}", name, k));
    };
    RedistStep offset;
    offset.kind = RedistStep::Kind::VocabOffset;
    offset.mesh = params.mesh;
    offset.axes = axes;
    offset.rows = rows;
    offset.globalAfter = indexType.shape;
    auto [n0, i0] = next();
    std::string why = fmt::format("{} holds table rows [offset, offset + {}) on this rank: shift the indices", name, rows);
    ValueId s = ins.add(n0, i0, "Sub", {Operand::ofValue(indices), Operand::ofConstant(ScalarTensor{idx, 0})}, {}, {indexType},
                        offset, why);
    auto [n1, i1] = next();
    ValueId r = ins.add(n1, i1, "ReLU", {Operand::ofValue(s)}, {}, {indexType}, std::nullopt, "clamp indices below the rows held");
    auto [n2, i2] = next();
    ValueId m = ins.add(n2, i2, "Minimum", {Operand::ofValue(r), Operand::ofConstant(ScalarTensor{idx, static_cast<double>(rows - 1)})},
                        {}, {indexType}, std::nullopt, "clamp indices above the rows held");
    auto [n3, i3] = next();
    ValueId e = ins.add(n3, i3, "Equal", {Operand::ofValue(s), Operand::ofValue(m)}, {}, {{DType::Bool, indexType.shape}},
                        std::nullopt, "true where the index falls in the rows held");
    // The Gather itself is node 4 of the replace graph (ops.md): it prints as `<op>.replace.4`.
    auto [n4, i4] = next();
    graph.op(id).operands[1].value = m;
    graph.op(id).printedName = n4;
    graph.op(id).instanceName = i4;
    return MaskedLookup{e, counter};
  }

  // A OneHot whose class dim is split: each rank one-hots its class range [offset, offset +
  // depth/n), so it reads Sub(indices, offset); out-of-range indices give off_value as they must.
  // Shape slicing gives the OneHot its local depth.
  static void emitClassOffset(Graph& graph, Inserter& ins, OpId id) {
    const Op& op = graph.op(id);
    const TensorLayout& out = op.parallel.outputLayouts[0];
    int64_t axis = std::get<int64_t>(op.attrs.at("axis"));
    size_t classDim = axis == -1 ? out.shape.size() - 1 : static_cast<size_t>(axis);
    std::vector<int> axes;
    for (int a : out.dims[classDim])
      if (out.mesh.dims[a] > 1) axes.push_back(a);
    if (axes.empty()) return;
    ValueId indices = op.operands[0].value;
    TensorType indexType = graph.value(indices).type;
    RedistStep offset;
    offset.kind = RedistStep::Kind::VocabOffset;
    offset.mesh = out.mesh;
    offset.axes = axes;
    offset.rows = out.sliceShape()[classDim];
    offset.globalAfter = indexType.shape;
    const std::string name = op.name;
    ValueId shifted = ins.add(fmt::format("{}.replace.0", name), fmt::format("replace_op_{}_0", name), "Sub",
                              {Operand::ofValue(indices), Operand::ofConstant(ScalarTensor{indexType.dtype, 0})}, {}, {indexType}, offset,
                              fmt::format("{} one-hots only its {} classes [offset, offset + {}) on this rank", name, offset.rows,
                                          offset.rows));
    graph.op(id).operands[0].value = shifted;
  }

  // After the Gather g (`.replace.4`): c = Cast(e, dtype), x = ExpandDims(c, -1), y = Mul(g, x),
  // `.replace.5` to `.7`; returns y.
  static ValueId emitVocabLookupAfter(Graph& graph, Inserter& ins, OpId id, const MaskedLookup& lookup) {
    const std::string name = graph.op(id).name;
    ValueId g = graph.op(id).results[0];
    ValueId e = lookup.mask;
    TensorType out = graph.value(g).type;
    Shape mask = graph.value(e).type.shape;
    int counter = lookup.nextIndex;
    auto next = [&] {
      int k = counter++;
      return std::make_pair(fmt::format("{}.replace.{}", name, k), fmt::format("replace_op_{}_{}", name, k));
    };
    auto [n4, i4] = next();
    ValueId c = ins.add(n4, i4, "Cast", {Operand::ofValue(e), Operand::ofConstant(out.dtype)}, {}, {{out.dtype, mask}},
                        std::nullopt, "the mask as numbers");
    ValueId x = c;
    if (out.shape.size() > mask.size()) {
      mask.push_back(1);
      auto [n5, i5] = next();
      x = ins.add(n5, i5, "ExpandDims", {Operand::ofValue(c), Operand::ofConstant(int64_t{-1})}, {}, {{out.dtype, mask}},
                  std::nullopt, "broadcast the mask over the embedding dim");
    }
    auto [n6, i6] = next();
    return ins.add(n6, i6, "Mul", {Operand::ofValue(g), Operand::ofValue(x)}, {}, {out}, std::nullopt,
                   "zero the rows this rank does not hold; the AllReduce sums the ranks' rows");
  }

  // Right after the op: what completes its partial results, shared by all consumers.
  static void emitForwardOps(Graph& graph, Inserter& ins, OpId id, std::vector<ValueId>& current) {
    const OpParallelState p = graph.op(id).parallel;
    int counter = 0;
    if (!p.forwardOps.empty()) emitReductions(graph, ins, id, current, counter);
    emitConstraints(graph, ins, id, current, counter);
  }

  // The op's output `sharding` constraints: convert each constrained result to its layout.
  static void emitConstraints(Graph& graph, Inserter& ins, OpId id, std::vector<ValueId>& current, int& counter) {
    const OpParallelState p = graph.op(id).parallel;
    const std::string opName = graph.op(id).name;
    const std::vector<ValueId> results = graph.op(id).results;
    for (size_t r = 0; r < p.beforeConstraint.size(); ++r) {
      if (!p.beforeConstraint[r]) continue;
      const Value v = graph.value(results[r]);
      PlannerOptions options{graph.parallel.enableAlltoall, byteSize(v.type.dtype)};
      RedistPlan plan = plan_(graph, *p.beforeConstraint[r], p.finalLayouts[r], options);
      auto names = [&](const std::string&) {
        int k = counter++;
        return std::make_pair(fmt::format("{}.forward_op.{}", opName, k), fmt::format("forward_op_{}_{}", opName, k));
      };
      ValueId input = current[results[r]];
      // Why the result is converted: the user's constraint on it, or factor propagation's
      // fixed point, which holds the tensor in another sharding than the op computes.
      bool constrained = r < graph.op(id).annotation.outputSharding.size() && graph.op(id).annotation.outputSharding[r];
      std::string why = constrained ? fmt::format("the sharding constraint on {}", v.name)
                        : p.sharding.conversion == OpSharding::Conversion::ReshapeConsumer
                            ? fmt::format("{} hands its consumer the layout it needs (MindSpore's ReshapeInfo)", opName)
                            : fmt::format("factor propagation holds {} as {}; {} computes it as {}", v.name,
                                          printAliasLayout(p.finalLayouts[r]), opName, printAliasLayout(*p.beforeConstraint[r]));
      for (const RedistStep& step : plan.steps)
        input = emitStep(ins, step, input, v.type.dtype, fmt::format("{}: {}", why, stepReason(step, opName, 0, opName)), names);
      current[results[r]] = input;
    }
  }

  static void emitReductions(Graph& graph, Inserter& ins, OpId id, std::vector<ValueId>& current, int& counter) {
    const OpParallelState p = graph.op(id).parallel;
    std::string opName = graph.op(id).name;
    ValueId result = graph.op(id).results[0];
    const Value v = graph.value(result);  // a copy: inserting ops appends to graph.values
    DType dtype = v.type.dtype;
    Shape local = p.outputLayouts[0].sliceShape();
    ValueId input = current[result];  // after a masked lookup, its Mul
    auto names = [&](const std::string&) {
      int k = counter++;
      return std::make_pair(fmt::format("{}.forward_op.{}", opName, k), fmt::format("forward_op_{}_{}", opName, k));
    };
    for (const ForwardOp& f : p.forwardOps) {
      RedistStep step;
      step.mesh = p.sharding.mesh;
      step.axes = f.axes;
      step.reduceOp = f.reduceOp;
      step.localBefore = local;
      step.globalAfter = v.type.shape;
      step.divisor = f.divisor;
      step.kind = f.kind == ForwardOp::Kind::AllReduce       ? RedistStep::Kind::AllReduce
                  : f.kind == ForwardOp::Kind::ReduceScatter ? RedistStep::Kind::ReduceScatter
                                                             : RedistStep::Kind::RealDiv;
      if (step.kind == RedistStep::Kind::ReduceScatter) local[0] /= step.groupSize();
      step.localAfter = local;
      input = emitStep(ins, step, input, dtype, f.reason, names);
    }
    current[result] = input;
  }
};

}  // namespace

std::unique_ptr<Pass> createRedistributionPass() { return std::make_unique<RedistributionPass>(); }

}  // namespace irc
