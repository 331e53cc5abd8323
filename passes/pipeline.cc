#include "passes/pipeline.h"

#include <algorithm>

#include "passes/pass_manager.h"

#include "passes/layout_inference.h"
#include "passes/redistribution.h"
#include "passes/shape_slicing.h"
#include "passes/strategy_propagation.h"

namespace irc {

const std::vector<PipelineStage>& pipelineStages() {
  // Each stage needs everything before it. Passes of later issues (strategy propagation, layout
  // inference, redistribution, shape slicing) join here as they are built; none is listed before
  // it really works.
  static const std::vector<PipelineStage> stages = {
      {0, "parse", "parse", "the model as loaded: graph built, shapes and dtypes inferred", nullptr, nullptr},
      // Every op needs a strategy before any layout exists; the search mode picks the algorithm.
      {1, "sharding_propagation", "step_parallel_begin",
       "strategy propagation (search_mode: sharding_propagation, factor_propagation, data_parallel, semi_auto)",
       [](const ParallelConfig& p) { return createStrategyPropagationPass(p.searchMode); }, nullptr},
      // Layouts follow from strategies: each op's view of its operands and results.
      {2, "layout_inference", "tensor_layout", "device matrix, tensor maps and partial state of every op's tensors",
       [](const ParallelConfig&) { return createLayoutInferencePass(); }, nullptr},
      // Communication goes where a producer's layout differs from its consumer's need.
      {3, "redistribution", "step_parallel_end", "forward ops after partial results, redistributions on mismatched edges",
       [](const ParallelConfig&) { return createRedistributionPass(); }, nullptr},
      // Last, each rank's own program: local shapes, its slices, its groups and bounds.
      {4, "shape_slicing", "validate", "one rank's local graph: sliced inputs and weights, local shapes (per rank)", nullptr,
       [](int64_t rank) { return createShapeSlicingPass(rank); }},
  };
  return stages;
}

void schedulePipeline(PassManager& manager, const ParallelConfig& parallel, const std::vector<std::string>& only,
                      const std::string& stopAfter) {
  for (const PipelineStage& stage : pipelineStages()) {
    if (!stage.make && !stage.makeForRank) {  // the frontend's stage: nothing to schedule
      if (stage.passName == stopAfter) break;
      continue;
    }
    bool chosen = only.empty() || std::find(only.begin(), only.end(), stage.passName) != only.end();
    if (chosen && stage.make) manager.addPass(stage.position, stage.make(parallel));
    if (chosen && stage.makeForRank) manager.addRankPass(stage.position, stage.makeForRank);
    if (stage.passName == stopAfter) break;
  }
}

RunOutcome runForEveryRank(Graph& graph, PassContext& context, std::map<int64_t, Graph>& locals) {
  PassManager manager;
  schedulePipeline(manager, graph.parallel);
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < graph.parallel.deviceNum; ++r) ranks.push_back(r);
  manager.setRanks(ranks);
  manager.setRankGraphSink([&](int64_t rank, Graph&& g) { locals.emplace(rank, std::move(g)); });
  return manager.run(graph, context);
}

const PipelineStage* findStage(std::string_view name) {
  // factor_propagation is the same pipeline slot as sharding_propagation, in the other mode.
  if (name == "factor_propagation") name = "sharding_propagation";
  for (const auto& s : pipelineStages())
    if (s.passName == name || s.dumpName == name) return &s;
  return nullptr;
}

std::vector<std::string> stageNames() {
  std::vector<std::string> names;
  for (const auto& s : pipelineStages()) {
    names.push_back(s.passName);
    if (s.dumpName != s.passName) names.push_back(s.dumpName);
  }
  return names;
}

}  // namespace irc
