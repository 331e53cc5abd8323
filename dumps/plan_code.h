#pragma once
// The compiled plan as code a user runs (docs/plan-code.md): `--torch-out plan.py`, DTensor's
// parallelize_module plan with irc's prediction in comments, and `--mindspore-out shard.py`,
// MindSpore's shard() calls beside the strategy checkpoint.
#include <string>
#include <vector>

#include "dumps/report.h"
#include "passes/manager/compile_options.h"
#include "cost/memory_estimate.h"

namespace irc {

struct PlanCode {
  std::string text;
  std::vector<std::string> warnings;  // what DTensor's styles cannot say, one line each
};

// A Python file defining `parallelize(model, mesh)`: the plan's `modules:` styles as written
// (each module it styled), or for other plans the style each Linear's and Embedding's weight
// layout amounts to (colwise: its out features split; rowwise: its in features, or an
// Embedding's vocabulary). Module paths are those of the exported module, or of the model
// transformers builds from a config.json (`facts.modulesFromConfig`).
PlanCode torchPlanCode(const Graph& graph, const CompileOptions& options, const CompileTotals& totals,
                       const MemoryEstimate* memory, const ModelFacts& facts);

// A Python file with one `ops.<Type>().shard(<strategy>)` per op with a strategy, keyed by the
// op's MindSpore name, in execution order: the strategies the checkpoint `checkpointFile` holds.
std::string mindsporeShardCode(const Graph& graph, const CompileOptions& options, const std::string& checkpointFile);

}  // namespace irc
