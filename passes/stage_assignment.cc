#include "passes/stage_assignment.h"

#include "passes/analysis/pipeline_split.h"
#include "passes/redistribution.h"

namespace irc {

std::unique_ptr<Pass> createStageAssignmentPass(const CompileOptions& options) {
  // A step of redistribution's stage: `stages: auto` from the layouts' costs, and
  // `recompute_layers` on the stages.
  return makePass({"stage_assignment", "", {GraphFact::Layouts}, {}}, [options](Graph& graph, PassContext& context) {
    const bool autoStages = options.pipelineStages > 1 && options.autoStages;
    if (!autoStages && options.recomputeLayers.empty()) return PassStatus::Unchanged;
    if (!readyForRedistribution(graph, context)) return PassStatus::Failed;
    // Each op's stage changes, not the graph's structure.
    if (autoStages) assignAutoStages(graph, options);
    // Then `recompute_layers`: each stage's first layers, once the stages are known.
    if (auto error = applyRecomputeLayers(graph, options)) {
      context.diags.error(SourceLoc{}, *error);
      return PassStatus::Failed;
    }
    return PassStatus::Annotated;
  });
}

}  // namespace irc
