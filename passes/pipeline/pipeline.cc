#include "passes/pipeline/pipeline.h"

#include <algorithm>

#include "passes/manager/pass_manager.h"

#include "passes/checkpoint_strategies.h"
#include "passes/layout_inference.h"
#include "passes/pipeline_transfers.h"
#include "passes/reduction_fusion.h"
#include "passes/redistribution.h"
#include "passes/shape_slicing.h"
#include "passes/stage_assignment.h"
#include "passes/strategy_propagation.h"

namespace irc {
namespace {

std::vector<std::unique_ptr<Pass>> one(std::unique_ptr<Pass> pass) {
  std::vector<std::unique_ptr<Pass>> passes;
  passes.push_back(std::move(pass));
  return passes;
}

}  // namespace

const std::vector<PipelineStage>& pipelineStages() {
  // Each stage needs everything before it.
  static const std::vector<PipelineStage> stages = {
      {0, "parse", "parse", "the model as loaded: graph built, shapes and dtypes inferred", nullptr, nullptr},
      // Every op needs a strategy before any layout exists; the search mode picks the algorithm.
      {1, "sharding_propagation", "step_parallel_begin",
       "strategy propagation (search_mode: sharding_propagation, factor_propagation, data_parallel, semi_auto)",
       [](const CompileOptions& o) {
         std::vector<std::unique_ptr<Pass>> passes;
         passes.push_back(createCheckpointStrategyPass(o));  // a strategy checkpoint's ops
         passes.push_back(createStrategyPropagationPass(o));
         return passes;
       },
       nullptr},
      // Layouts follow from strategies: each op's view of its operands and results.
      {2, "layout_inference", "tensor_layout", "device matrix, tensor maps and partial state of every op's tensors",
       [](const CompileOptions& o) { return one(createLayoutInferencePass(o)); }, nullptr},
      // Communication goes where a producer's layout differs from its consumer's need.
      {3, "redistribution", "step_parallel_end", "forward ops after partial results, redistributions on mismatched edges",
       [](const CompileOptions& o) {
         std::vector<std::unique_ptr<Pass>> passes;
         passes.push_back(createStageAssignmentPass(o));  // stages: auto, from the layouts' costs
         passes.push_back(createReductionFusionPass(o));  // --redistribution optimal
         passes.push_back(createRedistributionPass(o));
         passes.push_back(createPipelineTransferPass(o));  // Send/Receive between stages
         return passes;
       },
       nullptr},
      // Last, each rank's own program: local shapes, its slices, its groups and bounds.
      {4, "shape_slicing", "validate", "one rank's local graph: sliced inputs and weights, local shapes (per rank)", nullptr,
       [](int64_t rank) { return createShapeSlicingPass(rank); }},
  };
  return stages;
}

void schedulePipeline(PassManager& manager, const CompileOptions& options) {
  const std::vector<std::string>& only = options.passes;
  for (const PipelineStage& stage : pipelineStages()) {
    if (!stage.make && !stage.makeForRank) {  // the frontend's stage: nothing to schedule
      if (stage.passName == options.stopAfter) break;
      continue;
    }
    bool chosen = only.empty() || std::find(only.begin(), only.end(), stage.passName) != only.end();
    if (chosen && stage.make)
      for (std::unique_ptr<Pass>& pass : stage.make(options)) manager.addPass(stage.position, std::move(pass));
    if (chosen && stage.makeForRank) manager.addRankPass(stage.position, stage.makeForRank);
    if (stage.passName == options.stopAfter) break;
  }
}

bool schedulesStrategyPropagation(const CompileOptions& options) {
  const std::vector<std::string>& only = options.passes;
  for (const PipelineStage& stage : pipelineStages()) {
    const bool chosen = only.empty() || std::find(only.begin(), only.end(), stage.passName) != only.end();
    if (stage.passName == "sharding_propagation" && chosen) return true;
    if (stage.passName == options.stopAfter) break;
  }
  return false;
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
