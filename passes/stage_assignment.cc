#include "passes/stage_assignment.h"

#include "passes/analysis/pipeline_split.h"
#include "passes/redistribution.h"

namespace irc {
namespace {

class StageAssignmentPass : public Pass {
 public:
  explicit StageAssignmentPass(const CompileOptions& options) : options_(options) {}
  std::string_view name() const override { return "stage_assignment"; }
  std::string_view dumpName() const override { return ""; }  // a step of redistribution's stage

  PassStatus run(Graph& graph, PassContext& context) override {
    if (options_.pipelineStages <= 1 || !options_.autoStages) return PassStatus::Unchanged;
    if (!readyForRedistribution(graph, context)) return PassStatus::Failed;
    // Each op's stage changes, not the graph's structure.
    assignAutoStages(graph, options_);
    return PassStatus::Annotated;
  }

 private:
  CompileOptions options_;
};

}  // namespace

std::unique_ptr<Pass> createStageAssignmentPass(const CompileOptions& options) {
  return std::make_unique<StageAssignmentPass>(options);
}

}  // namespace irc
