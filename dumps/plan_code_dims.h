#pragma once
// The mesh dims of a --torch-out file that DTensor's tensor-parallel styles do not carry
// (docs/plan-code.md): data parallelism (the batch split over the devices the styles leave) and
// pipeline stages (where each stage begins, as torch.distributed.pipelining's split points).
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/manager/compile_options.h"

namespace irc {

// The file's device mesh: its named dims (ranks row-major) and which of them carry data
// parallelism and pipeline stages ("" for none).
struct TorchMesh {
  std::vector<std::string> names;
  std::vector<int64_t> dims;
  std::string dp, pp;
  int64_t dpSize = 1;
};

// A pipelined plan's stages lead ("pp", outermost: irc numbers ranks stage by stage). Within a
// stage: the plan's named mesh; a modules: plan's axis over every device; else the batch's split
// ("dp"; with Linears split, every device they leave), the Linears' ("tp"), and what splits
// other ops over the rest of the devices (named, with a warning: DTensor's styles carry only the
// Linears').
TorchMesh torchMesh(const Graph& graph, const CompileOptions& options, bool given, const std::vector<Graph::ModuleStyle>& styles,
                    int64_t tpSize, std::vector<std::string>& warnings);

// How many ways the plan splits the batch: dim 0 of the graph's data inputs (1 when unsplit).
int64_t batchSplitWays(const Graph& graph);

// Per pipeline stage after the first, the outermost torch module that begins it: a module every
// op of which runs on that stage or later, whose first op is the stage's first. A stage that
// begins inside a module, or at an op of no module, gets a warning instead (and no entry).
std::vector<std::string> pipelineSplitPoints(const Graph& graph, int64_t stages, std::vector<std::string>& warnings);

// The DATA_PARALLEL and PIPELINE assignments and the functions that apply them (`dpDim`/`ppDim`
// empty: none), appended to a --torch-out file after PLAN.
std::string dataParallelSection(const std::string& dpDim, int64_t dpSize, int zeroStage);
std::string pipelineSection(const std::string& ppDim, int64_t stages, int64_t microBatches,
                            const std::vector<std::string>& splitPoints);

}  // namespace irc
