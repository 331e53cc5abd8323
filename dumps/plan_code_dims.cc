#include "dumps/plan_code_dims.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dumps/python_literal.h"
#include "plan/plan_queries.h"

namespace irc {

int64_t batchSplitWays(const Graph& graph) {
  int64_t ways = 1;
  for (ValueId v : graph.inputs) {
    if (graph.value(v).kind != ValueKind::Input) continue;
    const TensorLayout& layout = layoutOfValue(graph, v);
    if (layout.dims.empty()) continue;
    int64_t split = 1;
    for (int axis : layout.dims[0]) split *= layout.mesh.dims[axis];
    ways = std::max(ways, split);
  }
  return ways;
}

std::vector<std::string> pipelineSplitPoints(const Graph& graph, int64_t stages, std::vector<std::string>& warnings) {
  // Per module (and each module above it): the earliest stage of its ops and its first op's
  // position in the order.
  struct Extent {
    int32_t minStage = std::numeric_limits<int32_t>::max();
    size_t firstOp = std::numeric_limits<size_t>::max();
  };
  std::map<std::string, Extent> extent;
  std::vector<size_t> stageStart(stages, std::numeric_limits<size_t>::max());
  for (size_t i = 0; i < graph.order.size(); ++i) {
    const Op& op = graph.op(graph.order[i]);
    if (op.inserted()) continue;
    if (op.stage < stages) stageStart[op.stage] = std::min(stageStart[op.stage], i);
    if (op.modulePath < 0) continue;
    for (std::string path = graph.moduleOf(op);; path.resize(path.rfind('.'))) {
      Extent& e = extent[path];
      e.minStage = std::min(e.minStage, op.stage);
      e.firstOp = std::min(e.firstOp, i);
      if (path.find('.') == std::string::npos) break;
    }
  }
  std::vector<std::string> points;
  for (int32_t s = 1; s < stages; ++s) {
    if (stageStart[s] == std::numeric_limits<size_t>::max()) continue;
    const Op& first = graph.op(graph.order[stageStart[s]]);
    // A module begins the stage when nothing of it runs earlier and the stage's first op is its first.
    auto begins = [&](const std::string& path) {
      const Extent& e = extent.at(path);
      return e.minStage >= s && e.firstOp == stageStart[s];
    };
    if (first.modulePath < 0 || !begins(graph.moduleOf(first))) {
      warnings.push_back(fmt::format(
          "pipeline stage {} begins at op '{}', {}: torch.distributed.pipelining splits only where a module begins; "
          "PIPELINE leaves that split point out",
          s, first.name,
          first.modulePath < 0 ? "which belongs to no torch module" : fmt::format("inside module '{}'", graph.moduleOf(first))));
      continue;
    }
    std::string path = graph.moduleOf(first);
    while (path.find('.') != std::string::npos) {
      std::string parent = path.substr(0, path.rfind('.'));
      if (!begins(parent)) break;
      path = parent;
    }
    points.push_back(path);
  }
  return points;
}

TorchMesh torchMesh(const Graph& graph, const CompileOptions& options, bool given, const std::vector<Graph::ModuleStyle>& styles,
                    int64_t tpSize, std::vector<std::string>& warnings) {
  TorchMesh m;
  auto add = [&](const std::string& name, int64_t size) {
    m.names.push_back(name);
    m.dims.push_back(size);
  };
  if (options.pipelineStages > 1) {
    m.pp = "pp";
    add(m.pp, options.pipelineStages);
  }
  int64_t batchWays = batchSplitWays(graph);
  if (options.mesh) {
    for (size_t a = 0; a < options.mesh->names.size(); ++a) {
      add(options.mesh->names[a], options.mesh->dims[a]);
      if (m.dp.empty() && options.mesh->names[a] == "dp" && options.mesh->dims[a] == batchWays && batchWays > 1) {
        m.dp = "dp";
        m.dpSize = batchWays;
      }
    }
    return m;
  }
  if (given) {
    add(styles.empty() ? "tp" : styles[0].axis, options.deviceNum);
    return m;
  }
  int64_t others = std::max<int64_t>(1, options.deviceNum / std::max<int64_t>(1, tpSize));
  // With Linears split, the devices they leave hold replicas (a Megatron plan splits the batch
  // at its first product, not necessarily at the input); else the batch's split says.
  int64_t dp = tpSize > 1 ? others : std::gcd(batchWays, others);
  int64_t rest = others / dp;
  if (dp > 1) {
    m.dp = "dp";
    m.dpSize = dp;
    add(m.dp, dp);
  }
  if (tpSize > 1) add("tp", tpSize);
  if (rest > 1) {
    add(tpSize > 1 ? "mp" : "tp", rest);
    warnings.push_back(
        fmt::format("the plan splits ops {} ways over the devices the batch's {}-way split and the Linears' {}-way split leave "
                    "(ops outside torch modules, or dims no DTensor style splits); mesh dim '{}' carries no style",
                    rest, dp, tpSize, m.names.back()));
  }
  if (m.names.size() == (m.pp.empty() ? 0u : 1u)) add("tp", options.deviceNum);  // one device per stage
  return m;
}

std::string dataParallelSection(const std::string& dpDim, int64_t dpSize, int zeroStage) {
  std::string out =
      "# Data parallelism: the mesh dim over which the plan splits the batch, each rank holding a replica\n"
      "# of its parameters (zero_stage 1 and 2 shard the optimizer's states and gradients over it, 3 the\n"
      "# parameters too); data_parallel(model, mesh) applies it after parallelize().\n";
  if (dpDim.empty()) return out + "DATA_PARALLEL = None\n\n";
  out += fmt::format("DATA_PARALLEL = {{\"dim\": {}, \"size\": {}, \"zero_stage\": {}}}\n\n", pythonString(dpDim), dpSize,
                     zeroStage);
  return out;
}

std::string pipelineSection(const std::string& ppDim, int64_t stages, int64_t microBatches,
                            const std::vector<std::string>& splitPoints) {
  std::string out =
      "# Pipeline stages: the mesh dim whose index is a rank's stage, the micro-batches of a step, and the\n"
      "# module each later stage begins at (torch.distributed.pipelining's split_spec:\n"
      "# pipeline_split_spec()); ranks of stage s run stage s's part of the model.\n";
  if (ppDim.empty()) return out + "PIPELINE = None\n\n";
  std::vector<std::string> points;
  for (const std::string& p : splitPoints) points.push_back(pythonString(p));
  out += fmt::format("PIPELINE = {{\"dim\": {}, \"stages\": {}, \"micro_batches\": {}, \"split_points\": [{}]}}\n\n",
                     pythonString(ppDim), stages, microBatches, fmt::join(points, ", "));
  return out;
}

}  // namespace irc
