// Needs: redistribution (every edge consistent, inserted ops carrying their steps). Guarantees:
// the graph is rank `rank`'s program: every input and parameter has the shape of its slice (and
// knows the slice), inserted ops have the rank's groups and slice bounds, model Reshapes reshape
// to local shapes, every shape is re-inferred on local shapes, and every op's local result shape
// equals the slice of the layout it computes (else an internal error: the layouts are
// inconsistent).
#include "passes/shape_slicing.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/inserted_ops.h"
#include "ops/op_defs.h"
#include "ops/shape_inference.h"
#include "passes/layout_inference.h"
#include "ops/op_family.h"

namespace irc {
namespace {

class ShapeSlicingPass : public Pass {
 public:
  explicit ShapeSlicingPass(int64_t rank) : rank_(rank) {}
  std::string_view name() const override { return "shape_slicing"; }
  std::string_view dumpName() const override { return "validate"; }

  PassStatus run(Graph& graph, PassContext& context) override {
    graph.localShapes = true;
    graph.rank = rank_;
    if (graph.stageDevices > 0) keepStage(graph, static_cast<int32_t>(rank_ / graph.stageDevices));
    for (const auto* list : {&graph.inputs, &graph.parameters})
      for (ValueId id : *list) {
        Value& v = graph.value(id);
        if (!v.layout) {
          context.diags.error(v.loc, fmt::format("'{}' has no layout: shape slicing needs layout inference first", v.name));
          return PassStatus::Failed;
        }
        v.rankSlice = RankSlice{v.type.shape, v.layout->sliceRanges(rank_)};
        v.type.shape = v.layout->sliceShape();
      }
    // A copy of the global graph whose inserted ops already carry this rank's arguments (the
    // compile's own rank) keeps them.
    const bool materialize = graph.insertedOpsRank != rank_;
    graph.insertedOpsRank = rank_;
    for (OpId id : graph.order) {
      Op& op = graph.op(id);
      if (materialize) materializeForRank(op, rank_);
      // The op's constants and attributes for this rank's slices (its family's local-shape rule).
      if (!op.inserted() && op.parallel->layoutsInferred) rulesOf(op).localize(op);
      reinfer(graph, op);
      checkAgainstLayouts(graph, op);
    }
    for (ValueId out : graph.outputs) {
      Value& v = graph.value(out);
      const TensorLayout& l = layoutOfValue(graph, out);
      v.rankSlice = RankSlice{l.shape, l.sliceRanges(rank_)};
    }
    return PassStatus::Changed;
  }

 private:
  // A pipelined rank runs its stage's ops: they alone stay in its order, with the inputs and
  // parameters they read; a Receive gets its data from the other stage, not from its Send; the
  // stage returns what leaves it (its Sends) unless it computes graph outputs.
  static void keepStage(Graph& graph, int32_t stage) {
    graph.stage = stage;
    std::vector<OpId> kept;
    std::vector<bool> read(graph.values.size(), false);
    for (OpId id : graph.order) {
      Op& op = graph.op(id);
      if (op.stage != stage) continue;
      if (op.type == "Receive") op.operands.clear();
      for (const Operand& o : op.operands)
        if (o.isValue()) read[o.value] = true;
      kept.push_back(id);
    }
    graph.order = std::move(kept);
    std::vector<bool> produced(graph.values.size(), false);
    std::vector<ValueId> sends;
    for (OpId id : graph.order) {
      for (ValueId r : graph.op(id).results) produced[r] = true;
      if (graph.op(id).type == "Send") sends.push_back(graph.op(id).results[0]);
    }
    for (auto* list : {&graph.inputs, &graph.parameters})
      list->erase(std::remove_if(list->begin(), list->end(), [&](ValueId v) { return !read[v]; }), list->end());
    std::vector<ValueId> outputs;
    for (ValueId v : graph.outputs)
      if (produced[v] || (graph.value(v).producer == kNoId && read[v])) outputs.push_back(v);
    graph.outputs = outputs.empty() ? sends : outputs;
  }

  static void reinfer(Graph& graph, Op& op) {
    std::vector<InferOperand> in;
    for (const Operand& o : op.operands)
      in.push_back({o.isValue() ? &graph.value(o.value).type : nullptr, o.isValue() ? nullptr : &*o.constant});
    InferResult r = inferResultTypes(*findOpDef(op.type), in, op.attrs);
    if (auto* e = std::get_if<InferError>(&r))
      throw InternalError(fmt::format("rank {}: op '{}' ({}) does not fit its local shapes: {}", graph.rank, op.name, op.type,
                                      e->message));
    auto types = std::get<std::vector<TensorType>>(std::move(r));
    for (size_t i = 0; i < types.size() && i < op.results.size(); ++i) graph.value(op.results[i]).type = types[i];
  }

  static void checkAgainstLayouts(const Graph& graph, const Op& op) {
    if (op.inserted() || !op.parallel->layoutsInferred) return;
    for (size_t r = 0; r < op.results.size(); ++r) {
      Shape want = op.parallel->outputLayouts[r].sliceShape();
      const Shape& got = graph.value(op.results[r]).type.shape;
      if (got != want)
        throw InternalError(fmt::format("rank {}: op '{}' computes a local result of shape {} but its layout gives {}", graph.rank,
                                        op.name, formatShape(got), formatShape(want)));
    }
  }

  int64_t rank_;
};

}  // namespace

std::unique_ptr<Pass> createShapeSlicingPass(int64_t rank) { return std::make_unique<ShapeSlicingPass>(rank); }

}  // namespace irc
