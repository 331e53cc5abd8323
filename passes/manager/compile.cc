#include "passes/manager/compile.h"

#include "passes/manager/pipeline.h"

namespace irc {

std::vector<int64_t> CompileOptions::everyRank() const {
  std::vector<int64_t> all;
  for (int64_t r = 0; r < rankCount(); ++r) all.push_back(r);
  return all;
}

CompileOptions optionsFromModel(const ParallelConfig& model) {
  CompileOptions o;
  static_cast<ParallelSettings&>(o) = model;
  o.settingsLoc = model.loc;
  return o;
}

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
