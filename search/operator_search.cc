#include "search/operator_search.h"

#include "passes/checkpoint_strategies.h"
#include "passes/pipeline/pipeline.h"
#include "passes/propagation/propagation_common.h"
#include "passes/strategy_propagation.h"
#include "search/auto_search.h"

namespace irc {

std::shared_ptr<const OperatorPlan> searchOperatorPlan(const Graph& graph, const CompileOptions& options) {
  if (options.searchMode != SearchMode::Auto || !schedulesStrategyPropagation(options) || !hasModelOps(graph)) return nullptr;
  // Where strategy propagation begins, on a copy: what fails before it is the compile's to say.
  Graph probe = graph;
  DiagnosticEngine before("", "");
  PassContext quiet{before};
  if (createCheckpointStrategyPass(options)->run(probe, quiet) == PassStatus::Failed) return nullptr;
  PropagationInput in = preparePropagation(probe, quiet, options, options.fullyUseDevices);
  if (in.failed) return nullptr;
  DiagnosticEngine said("", "");
  PassContext searchContext{said};
  auto plan = std::make_shared<OperatorPlan>();
  plan->found = runAutoSearch(probe, in, searchContext);
  plan->diagnostics = said.diagnostics();
  if (!plan->found) return plan;
  for (OpId id = 0; id < static_cast<OpId>(probe.ops.size()); ++id) {
    const Op& op = probe.op(id);
    if (op.parallel.written() && op.parallel->hasSharding && op.parallel->origin.kind == OriginKind::Searched)
      plan->choices.push_back({id, op.parallel->sharding, op.parallel->origin});
  }
  plan->summary = probe.search;
  return plan;
}

RunOutcome compileWithSearch(Graph& graph, const CompileOptions& options, PassContext& context, const CompileHooks& hooks) {
  if (options.operatorPlan) return compile(graph, options, context, hooks);
  std::shared_ptr<const OperatorPlan> plan = searchOperatorPlan(graph, options);
  if (!plan) return compile(graph, options, context, hooks);
  CompileOptions chosen = options;
  chosen.operatorPlan = std::move(plan);
  return compile(graph, chosen, context, hooks);
}

TrialCompile compileForTrials() {
  return [](Graph& graph, const CompileOptions& options, PassContext& context) {
    return compileWithSearch(graph, options, context);
  };
}

}  // namespace irc
