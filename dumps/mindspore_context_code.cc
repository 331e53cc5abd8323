#include "dumps/mindspore_context_code.h"

#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dumps/python_literal.h"

namespace irc {
namespace {

// The cell a stage or a checkpoint is given to: an op's module up to its layer's index
// ("model.layers.3" of "model.layers.3.self_attn.q_proj"), its whole module outside the layers
// ("lm_head"), its own name where it has none.
std::string cellOf(const Graph& graph, const Op& op) {
  if (op.modulePath < 0) return op.name;
  const std::string& path = graph.modulePaths[op.modulePath];
  size_t start = 0;
  while (start < path.size()) {
    size_t end = path.find('.', start);
    if (end == std::string::npos) end = path.size();
    bool numeric = end > start;
    for (size_t i = start; i < end; ++i) numeric = numeric && std::isdigit(static_cast<unsigned char>(path[i]));
    if (numeric) return path.substr(0, end);
    start = end + 1;
  }
  return path;
}

// A line the file cannot express, said in it and as a warning.
void notExpressible(PlanCode& code, const std::string& what) {
  code.text += "# not expressible: " + what + "\n";
  code.warnings.push_back(what);
}

// Each cell's stages (and chunk) and whether its ops are checkpointed, in model order.
struct Cells {
  std::map<std::string, std::set<int32_t>> stages;
  std::map<std::string, int32_t> chunks;
  std::set<std::string> recomputed, notRecomputed;  // cells with an op checkpointed, with one not
  std::vector<std::string> order;
};

Cells cellsOf(const Graph& graph, const CompileOptions& options) {
  Cells c;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted()) continue;
    const std::string cell = cellOf(graph, op);
    if (!c.stages.count(cell)) c.order.push_back(cell);
    c.stages[cell].insert(op.stage);
    c.chunks[cell] = std::max(c.chunks[cell], op.chunk);
    if (options.training && std::as_const(op).annotation->recompute) c.recomputed.insert(cell);
    else c.notRecomputed.insert(cell);
  }
  return c;
}

// STAGE_CONFIG and RECOMPUTE: each cell's stage, the cells checkpointed whole (one whose ops are
// only partly checkpointed is said not expressible).
void writeStagesAndRecompute(PlanCode& code, Cells& cells, bool pipelined) {
  std::string& out = code.text;
  out += "STAGE_CONFIG = {";
  if (pipelined)
    for (const std::string& cell : cells.order) {
      if (cells.stages[cell].size() > 1) {
        notExpressible(code, fmt::format("cell {} spans stages {}: stage_config gives a cell one stage; split it", cell,
                                         fmt::join(cells.stages[cell], ", ")));
        continue;
      }
      out += fmt::format("\n    {}: {},", pythonString(cell), *cells.stages[cell].begin());
    }
  out += pipelined ? "\n}\n" : "}\n";
  out += "RECOMPUTE = [";
  for (const std::string& cell : cells.order)
    if (cells.recomputed.count(cell) && !cells.notRecomputed.count(cell)) out += fmt::format("\n    {},", pythonString(cell));
  out += cells.recomputed.empty() ? "]\n" : "\n]\n";
  for (const std::string& cell : cells.order)
    if (cells.recomputed.count(cell) && cells.notRecomputed.count(cell))
      notExpressible(code,
                     fmt::format("cell {} is checkpointed in part (some of its ops); recompute() takes a whole cell", cell));
}

}  // namespace

PlanCode mindsporeContextCode(const Graph& graph, const CompileOptions& options) {
  PlanCode code;
  std::string& out = code.text;
  const bool pipelined = options.pipelineStages > 1;
  Cells cells = cellsOf(graph, options);
  out += "\n# The plan's pipeline, optimizer parallel and recompute, as MindSpore 2.7's AutoParallel and\n";
  out += "# Pipeline take them: net = parallelize(net) before training.\n";
  out += "from mindspore.parallel import Pipeline\nfrom mindspore.parallel.auto_parallel import AutoParallel\n\n";
  const char* scheduler = traitsOf(options.schedule()).mindsporeScheduler;
  out += fmt::format("PIPELINE_STAGES = {}\nMICRO_BATCHES = {}\nINTERLEAVE = {}\nSCHEDULER = {}\n", options.pipelineStages,
                     options.microBatches, options.virtualStages > 1 ? "True" : "False",
                     pythonString(scheduler ? scheduler : "1f1b"));
  writeStagesAndRecompute(code, cells, pipelined);
  const int level = options.parallelOptimizerLevel;
  out += fmt::format("OPTIMIZER_LEVEL = {}\n", level > 0 ? pythonString(fmt::format("level{}", level)) : "None");
  if (pipelined && !scheduler)
    notExpressible(code, fmt::format("pipeline_schedule {}: MindSpore's schedulers are gpipe, 1f1b, seqpipe, seqvpp, "
                                     "seqsmartvpp and zero_bubble_v (ZB-V, not ZB-H1); SCHEDULER is 1f1b, whose bubble irc's "
                                     "figures do not assume",
                                     pipelineScheduleName(options.schedule())));
  if (pipelined && options.virtualStages > 1) {
    out += "CHUNK_CONFIG = {";
    for (const std::string& cell : cells.order) out += fmt::format("\n    {}: {},", pythonString(cell), cells.chunks[cell]);
    out += "\n}\n";
    notExpressible(code, fmt::format("the {} virtual stages' chunks: stage_config gives each cell its stage; CHUNK_CONFIG "
                                     "gives irc's chunk of each, as the interleaved schedule's order irc assumes runs them",
                                     options.virtualStages));
  }
  if (options.zeroStage > 0 && level == 0)
    notExpressible(code, fmt::format("zero_stage {} (Megatron's distributed optimizer: the optimizer states{} sharded over "
                                     "the data-parallel ranks, the weights whole); MindSpore's optimizer parallel shards the "
                                     "weights too",
                                     options.zeroStage, options.zeroStage >= 2 ? " and gradients" : ""));
  if (!pipelined && options.microBatches > 1 && options.training)
    notExpressible(code, fmt::format("{} micro-batches accumulated before one gradient reduction (irc's step runs them); "
                                     "wrap the cell in MindSpore's gradient accumulation for it",
                                     options.microBatches));
  out += R"(

def parallelize(net):
    """net with RECOMPUTE's cells recomputed, pipelined over STAGE_CONFIG in MICRO_BATCHES, and
    optimizer parallel at OPTIMIZER_LEVEL, under semi-auto parallel (the SHARDS above)."""
    for name, cell in net.cells_and_names():
        if name in RECOMPUTE:
            cell.recompute()
    if PIPELINE_STAGES > 1:
        net = Pipeline(net, micro_size=MICRO_BATCHES, stage_config=STAGE_CONFIG)
    parallel = AutoParallel(net, parallel_mode="semi_auto")
    if PIPELINE_STAGES > 1:
        parallel.pipeline(stages=PIPELINE_STAGES, interleave=INTERLEAVE, scheduler=SCHEDULER)
    if OPTIMIZER_LEVEL:
        parallel.hsdp(optimizer_level=OPTIMIZER_LEVEL)
    return parallel
)";
  return code;
}

}  // namespace irc
