#include "passes/reduction_fusion.h"

#include "ops/collective.h"
#include "ops/op_family.h"
#include "passes/redistribution.h"

namespace irc {
namespace {

// The optimal planner plans a partial result's reduction together with its one consumer's
// redistribution (AllReduce + StridedSlice becomes ReduceScatter): such an op keeps no forward
// op and its value reaches the edge partial. Values with several consumers, graph outputs and
// ReduceMean (whose RealDiv must follow the sum) keep their forward ops.
void fuseReductionsIntoEdges(Graph& graph) {
  auto uses = computeUses(graph);
  std::vector<bool> isOutput(graph.values.size(), false);
  for (ValueId v : graph.outputs) isOutput[v] = true;
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    OpParallelState& p = *op.parallel;
    if (p.forwardOps.size() != 1 || !completesPartial(p.forwardOps[0].step) || !rulesOf(op).reductionMayMoveToEdge()) continue;
    ValueId result = op.results[0];
    if (uses[result].size() != 1 || isOutput[result] || p.beforeConversion[0]) continue;
    p.forwardOps.clear();
    graph.value(result).layout = p.outputLayouts[0];  // partial: the edge's plan reduces it
  }
}

}  // namespace

std::unique_ptr<Pass> createReductionFusionPass(const CompileOptions& options) {
  // A step of redistribution's stage, with --redistribution optimal.
  return makePass({"reduction_fusion", "", {GraphFact::Layouts}, {}}, [options](Graph& graph, PassContext& context) {
    if (options.redistribution != RedistributionMode::Optimal) return PassStatus::Unchanged;
    if (!readyForRedistribution(graph, context)) return PassStatus::Failed;
    // Forward ops and layouts change, not the graph's structure.
    fuseReductionsIntoEdges(graph);
    return PassStatus::Annotated;
  });
}

}  // namespace irc
