#include "passes/pipeline/compile.h"

#include "passes/pipeline/pipeline.h"

namespace irc {

RunOutcome compile(Graph& graph, const CompileOptions& options, PassContext& context, const CompileHooks& hooks) {
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
