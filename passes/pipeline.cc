#include "passes/pipeline.h"

namespace irc {

const std::vector<PipelineStage>& pipelineStages() {
  // Each stage needs everything before it. Passes of later issues (strategy propagation, layout
  // inference, redistribution, shape slicing) join here as they are built; none is listed before
  // it really works.
  static const std::vector<PipelineStage> stages = {
      {0, "parse", "parse", "the model as loaded: graph built, shapes and dtypes inferred", nullptr},
  };
  return stages;
}

const PipelineStage* findStage(std::string_view name) {
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
