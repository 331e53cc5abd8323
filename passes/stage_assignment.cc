#include "passes/stage_assignment.h"

#include "passes/analysis/pipeline_split.h"
#include "passes/redistribution.h"

namespace irc {

std::unique_ptr<Pass> createStageAssignmentPass(const CompileOptions& options) {
  // A step of redistribution's stage: `stages: auto` from the layouts' costs.
  return makePass({"stage_assignment", "", {GraphFact::Layouts}, {}}, [options](Graph& graph, PassContext& context) {
    if (options.pipelineStages <= 1 || !options.autoStages) return PassStatus::Unchanged;
    if (!readyForRedistribution(graph, context)) return PassStatus::Failed;
    // Each op's stage changes, not the graph's structure.
    assignAutoStages(graph, options);
    return PassStatus::Annotated;
  });
}

}  // namespace irc
