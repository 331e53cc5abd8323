#pragma once
// The compile pipeline: THE ordered list of stages, with MindSpore's dump names.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

struct PipelineStage {
  int position;             // 00 = the parsed model; dump files are numbered by it
  std::string passName;     // what --passes / --stop-after / --dump-after take
  std::string dumpName;     // MindSpore's name, also accepted by --dump-after
  std::string description;  // one line for --list-passes
  // Builds the stage's passes, in the order they run (one writes the stage's dump; the others
  // are steps of it: stage assignment before redistribution, Send/Receive insertion after);
  // null for stage 0 (the frontend, not a pass) and for per-rank stages.
  std::function<std::vector<std::unique_ptr<Pass>>(const CompileOptions&)> make;
  // A stage run once per dumped rank on its own copy of the graph (shape slicing).
  std::function<std::unique_ptr<Pass>(int64_t rank)> makeForRank;
};

const std::vector<PipelineStage>& pipelineStages();

class PassManager;
// Schedules the pipeline's stages on `manager`: all of them, only those in `options.passes`, or
// up to and including `options.stopAfter` (compile() does this; see passes/pipeline/compile.h).
void schedulePipeline(PassManager& manager, const CompileOptions& options);
// Whether those stages include strategy propagation (where search_mode auto's choice applies).
bool schedulesStrategyPropagation(const CompileOptions& options);

// The stage a pass or dump name refers to, or null.
const PipelineStage* findStage(std::string_view name);
std::vector<std::string> stageNames();  // pass names and dump names, for "did you mean"

}  // namespace irc
