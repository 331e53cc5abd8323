// Needs: redistribution (every edge consistent, inserted ops carrying their steps). Guarantees:
// the graph is rank `rank`'s program: every input and parameter has the shape of its slice (and
// knows the slice), inserted ops have the rank's groups and slice bounds, model Reshapes reshape
// to local shapes, every shape is re-inferred on local shapes, and every op's local result shape
// equals the slice of the layout it computes (else an internal error: the layouts are
// inconsistent).
#include "passes/shape_slicing.h"

#include <algorithm>

#include <fmt/format.h>

#include "ops/inserted_ops.h"
#include "ops/op_defs.h"
#include "ops/shape_inference.h"
#include "plan/plan_queries.h"
#include "plan/stage_view.h"
#include "ops/op_family.h"

namespace irc {
namespace {

class ShapeSlicingPass : public Pass {
 public:
  explicit ShapeSlicingPass(int64_t rank) : rank_(rank) {}
  std::string_view name() const override { return "shape_slicing"; }
  std::string_view dumpName() const override { return "validate"; }
  GraphFacts needs() const override { return {GraphFact::Layouts, GraphFact::Communication}; }

  PassStatus run(Graph& graph, PassContext& context) override {
    graph.localShapes = true;
    graph.rank = rank_;
    if (graph.stageDevices > 0) keepPipelineStage(graph, static_cast<int32_t>(rank_ / graph.stageDevices));
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
    for (OpId id : graph.order) {
      Op& op = graph.op(id);
      materializeForRank(op, rank_);  // the global graph's inserted ops carry no rank's arguments
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
  static void reinfer(Graph& graph, Op& op) {
    std::vector<const TensorType*> operandTypes;
    operandTypes.reserve(op.operands.size());
    for (const Operand& o : op.operands) operandTypes.push_back(o.isValue() ? &graph.value(o.value).type : nullptr);
    InferResult r = inferOnOperandTypes(op, operandTypes);
    if (auto* e = std::get_if<InferError>(&r))
      throw InternalError(
          fmt::format("rank {}: op '{}' ({}) does not fit its local shapes: {}", graph.rank, op.name, op.type, e->message));
    auto types = std::get<std::vector<TensorType>>(std::move(r));
    for (size_t i = 0; i < types.size() && i < op.results.size(); ++i) graph.value(op.results[i]).type = types[i];
  }

  static void checkAgainstLayouts(const Graph& graph, const Op& op) {
    if (op.inserted() || !op.parallel->layoutsInferred) return;
    for (size_t r = 0; r < op.results.size(); ++r) {
      Shape want = op.parallel->outputLayouts[r].sliceShape();
      const Shape& got = graph.value(op.results[r]).type.shape;
      if (got != want)
        throw InternalError(fmt::format("rank {}: op '{}' computes a local result of shape {} but its layout gives {}",
                                        graph.rank, op.name, formatShape(got), formatShape(want)));
    }
  }

  int64_t rank_;
};

}  // namespace

std::unique_ptr<Pass> createShapeSlicingPass(int64_t rank) { return std::make_unique<ShapeSlicingPass>(rank); }

}  // namespace irc
