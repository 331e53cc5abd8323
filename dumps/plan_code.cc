#include "dumps/plan_code.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dumps/module_outputs.h"
#include "dumps/plan_code_dims.h"
#include "dumps/python_literal.h"
#include "ops/collective.h"
#include "ops/inserted_ops.h"
#include "ops/op_defs.h"
#include "ops/op_family.h"
#include "plan/plan_queries.h"
#include "ops/op_sharding.h"

namespace irc {
namespace {

// A tuple as Python writes it: (8,) for one entry.
std::string pyTuple(const std::vector<int64_t>& t) {
  if (t.size() == 1) return fmt::format("({},)", t[0]);
  return fmt::format("({})", fmt::join(t, ", "));
}

std::string pyStrategy(const ShardStrategy& s) {
  std::vector<std::string> parts;
  for (const IntTuple& t : s) parts.push_back(pyTuple(t));
  if (parts.size() == 1) return "(" + parts[0] + ",)";
  return fmt::format("({})", fmt::join(parts, ", "));
}

// MindSpore lays a plain strategy on a device matrix in the op's dim order. An op irc laid on
// another order (passes/propagation/mesh_alignment.h: its operand's mesh) is written as a
// MindSpore Layout over that order, so MindSpore runs the plan irc predicts; nullopt when the
// plain strategy gives the same layouts.
std::optional<std::string> pyLayoutShard(const Graph& graph, const Op& op, int64_t deviceNum) {
  if (!op.parallel->rule) return std::nullopt;
  const OpRule& rule = *op.parallel->rule;
  OpView view = viewOf(graph, op);
  ShardingResult inOrder = shardingFromStrategy(rule, view, strategyOf(op), deviceNum);
  const OpSharding* plain = std::get_if<OpSharding>(&inOrder);
  bool same = plain != nullptr;
  std::vector<TensorLayout> layouts;
  for (size_t k = 0; k < view.operandShapes.size(); ++k) {
    int operand = static_cast<int>(k);
    layouts.push_back(operandLayout(rule, op.parallel->sharding, operand, view.operandShapes[k]).standardForm());
    same = same && operandLayout(rule, *plain, operand, view.operandShapes[k]).sameAs(layouts.back());
  }
  if (same || layouts.empty()) return std::nullopt;
  // Every operand's standard form drops the same size-1 axes of the op's mesh: one naming serves.
  std::vector<std::string> names;
  for (int a = 0; a < layouts[0].mesh.rank(); ++a) names.push_back(fmt::format("d{}", a));
  std::vector<std::string> quoted, maps;
  for (const std::string& n : names) quoted.push_back(pythonString(n));
  for (TensorLayout& l : layouts) {
    l.mesh.names = names;
    std::vector<std::string> entries;
    for (const auto& axes : l.dims) {
      std::vector<std::string> dimNames;
      for (int a : axes) dimNames.push_back(pythonString(names[a]));
      entries.push_back(axes.empty()       ? "\"None\""
                        : axes.size() == 1 ? dimNames[0]
                                           : fmt::format("({})", fmt::join(dimNames, ", ")));
    }
    maps.push_back(fmt::format("layout({})", fmt::join(entries, ", ")));
  }
  return fmt::format("(lambda layout: ops.{}().shard(in_strategy=({}{})))(Layout({}, ({}{})))", op.type, fmt::join(maps, ", "),
                     maps.size() == 1 ? "," : "", pyTuple(layouts[0].mesh.dims), fmt::join(quoted, ", "),
                     quoted.size() == 1 ? "," : "");
}

// DTensor's class and arguments for a style; `keepDTensor`: its output stays a DTensor
// (use_local_output=False), for loss_parallel.
// `arrives`: the input's placement where the plan gave none and it is not the style's default.
std::string styleCall(const Graph::ModuleStyle& s, bool keepDTensor, const std::string& arrives) {
  std::string cls = s.style == "colwise" ? "ColwiseParallel" : s.style == "rowwise" ? "RowwiseParallel" : "SequenceParallel";
  std::vector<std::string> args;
  if (!s.inputLayouts.empty()) args.push_back("input_layouts=" + s.inputLayouts);
  else if (!arrives.empty()) args.push_back("input_layouts=" + arrives);
  if (!s.outputLayouts.empty()) args.push_back("output_layouts=" + s.outputLayouts);
  if (keepDTensor) args.push_back("use_local_output=False");
  return fmt::format("{}({})", cls, fmt::join(args, ", "));
}

// A module a weight layout styles: its style, the ranks it is split over, the op that says so.
struct FoundStyle {
  Graph::ModuleStyle style;
  int64_t split = 0;
  std::string op;
};

// A grouped product's weights [experts, ., .] split by the expert dim (expert parallelism, which
// torchtitan applies with its own ExpertParallel style, not a DTensor one) or by each expert's
// features (expert tensor parallelism, torchtitan's TensorParallel on its GroupedExperts):
// neither is a style over transformers' modules.
std::string expertSplitWarning(const Graph& graph, const Op& op, const TensorLayout& w) {
  std::string how;
  if (!w.dims[0].empty())
    how = fmt::format(
        "its experts are split over {} ranks by the expert dim (expert parallelism: torchtitan's "
        "ExpertParallel style)",
        w.mesh.dims[w.dims[0][0]]);
  else
    how =
        "each expert's weights are split on their features (expert tensor parallelism: torchtitan's "
        "TensorParallel on its GroupedExperts)";
  return fmt::format("{} ('{}'): {}, which this file does not write; left replicated", graph.moduleOf(op), op.name, how);
}

// The styles over one tensor-parallel mesh dim: of the size most modules are split into
// (`tpSize`); a module split otherwise is left out with a warning.
std::vector<Graph::ModuleStyle> onOneTensorDim(const std::vector<FoundStyle>& found, std::vector<std::string>& warnings,
                                               int64_t& tpSize) {
  std::map<int64_t, int> modulesOfSize;
  for (const FoundStyle& f : found) ++modulesOfSize[f.split];
  for (const auto& [size, count] : modulesOfSize)
    if (count > modulesOfSize[tpSize] || (count == modulesOfSize[tpSize] && size > tpSize) || !modulesOfSize.count(tpSize))
      tpSize = size;
  std::vector<Graph::ModuleStyle> out;
  for (const FoundStyle& f : found) {
    if (f.split == tpSize) {
      out.push_back(f.style);
      continue;
    }
    warnings.push_back(
        fmt::format("{} ('{}'): split {} ways where the plan's other modules are split {} ways over one "
                    "tensor-parallel mesh dim; left out of the plan",
                    f.style.module, f.op, f.split, tpSize));
  }
  return out;
}

// The styles a plan without `modules:` amounts to: each Linear's and Embedding's weight layout.
// One tensor-parallel mesh dim, "tp", carries them: of the size most modules are split into
// (`tpSize`); a module split otherwise is left out with a warning.
std::vector<Graph::ModuleStyle> derivedStyles(const Graph& graph, std::vector<std::string>& warnings, int64_t& tpSize) {
  std::vector<FoundStyle> found;
  std::map<std::string, size_t> seen;
  std::set<std::string> expertModules;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() || op.modulePath < 0 || !op.parallel->layoutsInferred) continue;
    ModulePart part = rulesOf(op).modulePart(op);
    if (part.kind != ModulePart::Kind::Product && part.kind != ModulePart::Kind::Lookup) continue;
    int table = part.kind == ModulePart::Kind::Lookup ? 0 : part.weight;
    if (table < 0 || static_cast<size_t>(table) >= op.operands.size()) continue;
    // Size-1 device axes split nothing.
    TensorLayout w = op.parallel->inputLayouts[tensorOperandIndex(op, table)].standardForm();
    const Operand& weight = op.operands[table];
    const bool split = std::any_of(w.dims.begin(), w.dims.end(), [](const std::vector<int>& axes) { return !axes.empty(); });
    if (w.dims.size() == 3 && split && part.kind == ModulePart::Kind::Product && weight.isValue() &&
        graph.value(modelValueBehind(graph, weight.value)).kind == ValueKind::Parameter) {
      if (expertModules.insert(graph.moduleOf(op)).second) warnings.push_back(expertSplitWarning(graph, op, w));
      continue;
    }
    if (w.dims.size() != 2) continue;
    // The weight's out-features dim ([in, out] as MatMul reads it, [out, in] transposed); an
    // Embedding's table is [vocabulary, embedding].
    int outDim = part.kind == ModulePart::Kind::Lookup ? 1 : part.weightTransposed ? 0 : 1;
    const std::vector<int>& outAxes = w.dims[outDim];
    const std::vector<int>& inAxes = w.dims[1 - outDim];
    const std::string& module = graph.moduleOf(op);
    if (outAxes.empty() && inAxes.empty()) continue;
    FoundStyle f{{module, "", "tp", "", ""}, 0, op.name};
    if (outAxes.size() == 1 && inAxes.empty()) {
      f.style.style = "colwise";
      f.split = w.mesh.dims[outAxes[0]];
    } else if (inAxes.size() == 1 && outAxes.empty()) {
      f.style.style = "rowwise";
      f.split = w.mesh.dims[inAxes[0]];
    } else {
      warnings.push_back(
          fmt::format("{} ('{}'): its weight is split on both dims or over several mesh axes, which no "
                      "DTensor parallel style expresses; left out of the plan",
                      module, op.name));
      continue;
    }
    if (auto [it, added] = seen.emplace(module, found.size()); !added) {
      if (found[it->second].style.style != f.style.style)
        warnings.push_back(fmt::format("{}: its ops' weights are split two ways ({} and {}); left as the first", module,
                                       found[it->second].style.style, f.style.style));
      continue;
    }
    found.push_back(f);
  }
  return onOneTensorDim(found, warnings, tpSize);
}

// PREPARE: where irc converts a module's output once for all its readers (module_outputs.h).
std::string prepareSection(const ModuleOutputs& boundaries) {
  std::string out =
      "# Per mesh dim, the module outputs irc's plan converts once for all their readers (DTensor would\n"
      "# otherwise convert them at each reader's style): PrepareModuleOutput on the module.\nPREPARE = {\n";
  std::vector<std::string> axes;
  for (const auto& c : boundaries.conversions)
    if (std::find(axes.begin(), axes.end(), c.axis) == axes.end()) axes.push_back(c.axis);
  for (const std::string& axis : axes) {
    out += fmt::format("    {}: {{\n", pythonString(axis));
    for (const auto& c : boundaries.conversions)
      if (c.axis == axis)
        out +=
            fmt::format("        {}: PrepareModuleOutput(output_layouts={}, desired_output_layouts={}, use_local_output={}),\n",
                        pythonString(c.module), c.from, c.to, c.keepDTensor ? "False" : "True");
    out += "    },\n";
  }
  return out + "}\n\n";
}

// LOSS_PARALLEL: the colwise modules whose vocabulary-split output leaves the model as a DTensor.
std::string lossSection(const ModuleOutputs& boundaries) {
  std::vector<std::string> modules;
  for (const std::string& m : boundaries.lossParallel) modules.push_back(pythonString(m));
  std::string out =
      "# Modules whose output leaves the model split on its last dim (the vocabulary), as a DTensor:\n"
      "# compute the loss on it inside loss_context() (DTensor's loss_parallel), which never gathers it.\n";
  out += fmt::format("LOSS_PARALLEL = [{}]\n\n\n", fmt::join(modules, ", "));
  out += "def loss_context():\n";
  out += "    \"\"\"The context the loss is computed in: loss_parallel() where the logits stay split.\"\"\"\n";
  out += "    return loss_parallel() if LOSS_PARALLEL else contextlib.nullcontext()\n\n";
  return out;
}

// The file's header: what it is and irc's prediction for it.
std::string predictionHeader(const Graph& graph, const CompileOptions& options, const CompileTotals& totals,
                             const MemoryEstimate* memory, bool given, bool modulesFromConfig,
                             const std::vector<std::string>& warnings) {
  std::string out = fmt::format("# irc's plan for {} on {} devices as PyTorch DTensor tensor parallelism (torch >= 2.4).\n",
                                graph.name, options.rankCount());
  out += given ? "# The plan's modules: styles, as written.\n"
               : "# Each Linear's and Embedding's style as its weight's layout in irc's plan says it.\n";
  out += modulesFromConfig ? "# Module paths are those of the model transformers builds from the config.json (from_config).\n#\n"
                           : "# Module paths are those of the module torch.onnx.export saw (the exported root).\n#\n";
  out += "# irc's prediction for one forward pass on every rank:\n";
  std::vector<std::string> collectives;
  for (CollectiveKind kind : kGroupCollectives)
    if (auto it = totals.insertedByType.find(std::string(collectiveName(kind))); it != totals.insertedByType.end())
      collectives.push_back(fmt::format("{} {}", it->second, collectiveName(kind)));
  out += fmt::format("#   collectives: {}\n", collectives.empty() ? "none" : fmt::format("{}", fmt::join(collectives, ", ")));
  out += fmt::format("#   communication per rank: {:.0f} bytes\n", totals.commBytesPerRank);
  if (memory) {
    out += fmt::format("#   peak memory per rank: {:.0f} bytes (inference)", memory->inference.peakBytes);
    if (memory->training) out += fmt::format(", {:.0f} bytes (a training step)", memory->training->peakBytes);
    out += "\n";
  }
  for (const std::string& w : warnings) out += "# not expressible: " + w + "\n";
  out += "\nimport contextlib\n\nimport torch\n";
  out += "from torch.distributed.device_mesh import DeviceMesh\n";
  out += "try:\n    from torch.distributed.tensor import Partial, Replicate, Shard\n";
  out += "except ImportError:  # torch < 2.5\n    from torch.distributed._tensor import Partial, Replicate, Shard\n";
  out +=
      "from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleOutput, RowwiseParallel, SequenceParallel,\n";
  out += "                                           loss_parallel, parallelize_module)\n\n";
  return out;
}

// PLAN: per mesh dim, each styled module's DTensor style.
std::string planSection(const std::vector<Graph::ModuleStyle>& styles, const ModuleOutputs& boundaries) {
  std::string out = "# Per mesh dim, the parallelize_module plan over it.\nPLAN = {\n";
  std::set<std::string> lossParallel(boundaries.lossParallel.begin(), boundaries.lossParallel.end());
  auto inputOf = [&](const std::string& module) {
    auto it = boundaries.inputLayouts.find(module);
    return it == boundaries.inputLayouts.end() ? std::string() : it->second;
  };
  std::vector<std::string> axes;
  for (const auto& s : styles)
    if (std::find(axes.begin(), axes.end(), s.axis) == axes.end()) axes.push_back(s.axis);
  for (const std::string& axis : axes) {
    out += fmt::format("    {}: {{\n", pythonString(axis));
    for (const auto& s : styles) {
      if (s.axis != axis) continue;
      if (s.style == "replicate") out += fmt::format("        # {}: replicate (a plain module: nothing to apply)\n", s.module);
      else
        out += fmt::format("        {}: {},\n", pythonString(s.module),
                           styleCall(s, lossParallel.count(s.module) > 0, inputOf(s.module)));
    }
    out += "    },\n";
  }
  return out + "}\n\n";
}

const char* const kParallelize =
    "def parallelize(model: torch.nn.Module, mesh: DeviceMesh) -> torch.nn.Module:\n"
    "    \"\"\"Applies irc's plan to `model` (the module that was exported) over `mesh` (MESH_DIMS).\"\"\"\n"
    "    for dim, plan in PLAN.items():\n"
    "        sub = mesh[dim] if mesh.ndim > 1 else mesh\n"
    "        parallelize_module(model, sub, plan)\n"
    "    for dim, plan in PREPARE.items():  # after PLAN: a module's output hook runs after its style's\n"
    "        sub = mesh[dim] if mesh.ndim > 1 else mesh\n"
    "        parallelize_module(model, sub, plan)\n"
    "    return model\n";

const char* const kDataParallel =
    "\n\n"
    "def data_parallel(model: torch.nn.Module, mesh: DeviceMesh) -> torch.nn.Module:\n"
    "    \"\"\"Replicates `model` (after parallelize) over DATA_PARALLEL's mesh dim: FSDP's fully_shard for\n"
    "    zero_stage 2 and 3 (3 frees the parameters after forward), else DDP's replicate (zero_stage 1: wrap\n"
    "    the optimizer in ZeroRedundancyOptimizer over the same group).\"\"\"\n"
    "    if DATA_PARALLEL is None:\n"
    "        return model\n"
    "    sub = mesh[DATA_PARALLEL[\"dim\"]] if mesh.ndim > 1 else mesh\n"
    "    if DATA_PARALLEL[\"zero_stage\"] >= 2:\n"
    "        try:\n"
    "            from torch.distributed.fsdp import fully_shard\n"
    "        except ImportError:  # torch < 2.6\n"
    "            from torch.distributed._composable.fsdp import fully_shard\n"
    "        return fully_shard(model, mesh=sub, reshard_after_forward=DATA_PARALLEL[\"zero_stage\"] >= 3)\n"
    "    from torch.distributed._composable.replicate import replicate\n"
    "    return replicate(model, device_mesh=sub)\n";

const char* const kPipelineSplitSpec =
    "\n\n"
    "def pipeline_split_spec() -> dict:\n"
    "    \"\"\"torch.distributed.pipelining.pipeline(model, mb_args, split_spec=pipeline_split_spec()): each\n"
    "    later stage begins at its module (PIPELINE's split_points).\"\"\"\n"
    "    if PIPELINE is None:\n"
    "        return {}\n"
    "    from torch.distributed.pipelining import SplitPoint\n"
    "    return {path: SplitPoint.BEGINNING for path in PIPELINE[\"split_points\"]}\n";

}  // namespace

PlanCode torchPlanCode(const Graph& graph, const CompileOptions& options, const CompileTotals& totals,
                       const MemoryEstimate* memory, const ModelFacts& facts) {
  PlanCode code;
  bool given = !graph.moduleStyles.empty();
  int64_t tpSize = options.deviceNum;
  std::vector<Graph::ModuleStyle> styles = given ? graph.moduleStyles : derivedStyles(graph, code.warnings, tpSize);
  if (!given && styles.empty()) tpSize = 1;  // no Linear or Embedding split: no tensor-parallel dim
  TorchMesh mesh = torchMesh(graph, options, given, styles, tpSize, code.warnings);
  std::vector<std::string> splitPoints;
  if (!mesh.pp.empty()) splitPoints = pipelineSplitPoints(graph, options.pipelineStages, code.warnings);
  // A layout's device matrix is a stage's: the conversions are read without the pipeline's dim.
  size_t stageDims = mesh.pp.empty() ? 0 : 1;
  ModuleOutputs boundaries =
      moduleOutputConversions(graph, styles, std::vector<std::string>(mesh.names.begin() + stageDims, mesh.names.end()),
                              std::vector<int64_t>(mesh.dims.begin() + stageDims, mesh.dims.end()));
  code.warnings.insert(code.warnings.end(), boundaries.warnings.begin(), boundaries.warnings.end());
  std::string& out = code.text;
  out += predictionHeader(graph, options, totals, memory, given, facts.modulesFromConfig, code.warnings);
  std::vector<std::string> dims;
  for (size_t a = 0; a < mesh.names.size(); ++a) dims.push_back(fmt::format("{}: {}", pythonString(mesh.names[a]), mesh.dims[a]));
  out += "# The device mesh's named dims, ranks row-major: init_device_mesh(\"cuda\", sizes, mesh_dim_names=names).\n";
  out += fmt::format("MESH_DIMS = {{{}}}\n\n", fmt::join(dims, ", "));
  out += planSection(styles, boundaries);
  out += prepareSection(boundaries);
  out += lossSection(boundaries);
  out += "\n";
  out += dataParallelSection(mesh.dp, mesh.dpSize, options.zeroStage);
  out += pipelineSection(mesh.pp, options.pipelineStages, options.microBatches, splitPoints);
  out += "\n";
  out += kParallelize;
  out += kDataParallel;
  out += kPipelineSplitSpec;
  return code;
}

std::string mindsporeShardCode(const Graph& graph, const CompileOptions& options, const std::string& checkpointFile) {
  std::string out = fmt::format("# irc's plan for {} on {} devices as MindSpore shard() calls, in execution order: the\n",
                                graph.name, options.rankCount());
  out += fmt::format("# strategies of the strategy checkpoint {} (keyed by each op's MindSpore name).\n",
                     checkpointFile.empty() ? "irc writes beside this file" : checkpointFile);
  out += "# Set each primitive of your network to its line's shard(), or load the checkpoint with\n";
  out += "# set_auto_parallel_context(strategy_ckpt_config={\"load_file\": ...}).\n";
  out += "# An op whose line builds a Layout runs on a device matrix in another order than its dims'\n";
  out += "# (the mesh its operand arrives in: docs/deviations.md); a plain strategy there would make\n";
  out += "# MindSpore redistribute on both sides of it.\n";
  out += "from mindspore import ops\nfrom mindspore.parallel import Layout\n\n";
  out += "SHARDS = {\n";
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() || !op.parallel->hasSharding || takesLayoutsFromNeighbours(op)) continue;
    const std::string name = pythonString(op.msName.empty() ? op.name : op.msName);
    if (defOf(op).notMindSporePrimitive)
      out += fmt::format("    # {}: {} is irc's op, no MindSpore primitive (its cell's own ops take it): {}\n", name, op.type,
                         pyStrategy(strategyOf(op)));
    else if (auto layout = pyLayoutShard(graph, op, options.deviceNum)) out += fmt::format("    {}: {},\n", name, *layout);
    else out += fmt::format("    {}: ops.{}().shard({}),\n", name, op.type, pyStrategy(strategyOf(op)));
  }
  out += "}\n";
  return out;
}

}  // namespace irc
