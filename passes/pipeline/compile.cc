#include "passes/pipeline/compile.h"

#include "passes/pipeline/pipeline.h"
#include "passes/search/auto_search.h"

namespace irc {

TrialCompile compileForTrials() {
  return [](Graph& graph, const CompileOptions& options, PassContext& context) { return compile(graph, options, context); };
}

RunOutcome compile(Graph& graph, const CompileOptions& given, PassContext& context, const CompileHooks& hooks) {
  // The operator-level search (a stage of this pipeline) compiles its candidates with this.
  CompileOptions options = given;
  if (!options.trialCompile) options.trialCompile = compileForTrials();
  if (!options.operatorLevelSearch) options.operatorLevelSearch = runAutoSearch;
  PassManager manager;
  schedulePipeline(manager, options);
  manager.setRanks(options.ranksToMaterialize());
  if (hooks.rankGraphs) manager.setRankGraphSink(hooks.rankGraphs);
  if (hooks.globalGraph) manager.setGlobalGraphHook(hooks.globalGraph);
  manager.setKeepGlobalGraph(hooks.keepGlobalGraph);
  for (PassInstrumentation* i : hooks.instrumentations) manager.addInstrumentation(i);
  return manager.run(graph, context);
}

}  // namespace irc
