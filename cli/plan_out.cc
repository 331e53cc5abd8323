#include "cli/plan_out.h"

#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "dumps/model_yaml_writer.h"
#include "ops/op_defs.h"
#include "cli/cli_util.h"
#include "ops/op_sharding.h"

namespace irc::cli {
namespace {

// The ops the operator-level search chose for (a Reshape's layouts follow its neighbours').
bool searched(const Op& op) {
  return !op.inserted() && op.parallel->hasSharding && op.parallel->origin.kind == OriginKind::Searched &&
         !takesLayoutsFromNeighbours(op);
}

YAML::Node strategyNode(const ShardStrategy& s) {
  YAML::Node n(YAML::NodeType::Sequence);
  for (const IntTuple& t : s) {
    YAML::Node dims(YAML::NodeType::Sequence);
    for (int64_t d : t) dims.push_back(d);
    dims.SetStyle(YAML::EmitterStyle::Flow);
    n.push_back(dims);
  }
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

// What the command line may have set over the plan's own `parallel` and `cluster`.
void applyCommandLineSettings(YAML::Node& root, const ParallelSettings& written) {
  YAML::Node parallel = root["parallel"];
  parallel["search_mode"] = std::string(searchModeName(written.searchMode));
  if (written.redistribution != RedistributionMode::MindSpore)
    parallel["redistribution"] = std::string(redistributionModeName(written.redistribution));
  if (written.memoryBudget > 0) parallel["memory_budget"] = written.memoryBudget;
  // The structural search turns it on for expert parallelism's dispatch (without it the plan
  // recompiled moved the tokens by AllGather and Split: more communication and memory).
  if (written.enableAlltoall) parallel["enable_alltoall"] = true;
  if (written.precision != Precision::Fp32) parallel["precision"] = std::string(precisionName(written.precision));
  if (written.training) parallel["training"] = true;
  if (written.cluster && !written.cluster->preset.empty() && !root["cluster"].IsDefined())
    root["cluster"]["preset"] = written.cluster->preset;
}

// A YAML model compiled as written: the model itself, with what the command line set and the
// operator-level search chose written in, keeps everything that decided the compile (a named
// mesh, layout annotations, out_strategy, input shardings), which a model rebuilt from the
// graph lost (a factor-propagation model's plan recompiled replicated).
std::string modelPlanText(YAML::Node& root, const Graph& graph, const ParallelSettings& written) {
  applyCommandLineSettings(root, written);
  // What --alpha/--beta/--gamma, --cluster and the like set over the model's own.
  YAML::Node choices = YAML::Load(compileChoicesYaml(written));
  for (auto it = choices.begin(); it != choices.end(); ++it) root["parallel"][it->first.Scalar()] = it->second;
  if (written.cluster) root["cluster"] = YAML::Load(clusterBlockYaml(*written.cluster))["cluster"];
  for (YAML::Node op : root["ops"]) {
    if (!op.IsMap() || !op["name"].IsScalar()) continue;
    std::optional<ValueId> v = graph.findValue(op["name"].Scalar());
    if (!v || graph.value(*v).producer == kNoId) continue;
    const Op& compiled = graph.op(graph.value(*v).producer);
    if (searched(compiled)) op["in_strategy"] = strategyNode(strategyOf(compiled));
    // A strategy the model does not write (a --strategy-ckpt-in checkpoint's) is written in.
    else if (compiled.annotation->inStrategy && !op["in_strategy"].IsDefined() && !op["in_layout"].IsDefined())
      op["in_strategy"] = strategyNode(*compiled.annotation->inStrategy);
  }
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

// The structural search's settings; the plan's graph is the step's, split again on loading.
void writeStructuralSettings(YAML::Node& root, const Graph& graph, const ParallelSettings& written) {
  YAML::Node parallel = root["parallel"];
  parallel["fully_use_devices"] = written.fullyUseDevices;
  if (written.pipelineStages > 1) parallel["pipeline_stages"] = written.pipelineStages;
  if (written.virtualStages > 1) parallel["virtual_stages"] = written.virtualStages;
  // (As a YAML model's plan writes it, dumps/model_yaml_writer.cc: a schedule other than the
  // stage count's default.)
  if (written.pipelineStages > 1 && traitsOf(written.schedule()).named)
    parallel["pipeline_schedule"] = std::string(pipelineScheduleName(written.schedule()));
  if (written.microBatches > 1) {
    parallel["micro_batches"] = written.microBatches;
    parallel["input_batch"] = "step";
  }
  if (written.zeroStage > 0) parallel["zero_stage"] = written.zeroStage;
  if (written.parallelOptimizerLevel > 0) {
    parallel["enable_parallel_optimizer"] = true;
    parallel["optimizer_level"] = "level" + std::to_string(written.parallelOptimizerLevel);
  }
  for (const auto& [name, stage] : stageEntries(graph, written.pipelineStages)) root["stages"][name] = stage;
  for (const std::vector<std::string>& names : recomputeEntries(graph)) {
    YAML::Node entry(YAML::NodeType::Sequence);
    for (const std::string& n : names) entry.push_back(n);
    entry.SetStyle(YAML::EmitterStyle::Flow);
    root["recompute"].push_back(entry);
  }
}

}  // namespace

std::optional<std::string> planOutText(const Graph& graph, const ParallelSettings& settings, const std::string& modelPath,
                                       const std::string& outPath, std::string& text) {
  std::string error;
  auto source = readModelText(modelPath, error);
  if (!source) return error;
  YAML::Node root;
  bool onnxPlan = false;
  if (!isOnnxFile(modelPath, *source)) {
    try {
      root = YAML::Load(*source);
      onnxPlan = root.IsMap() && root["graph"].IsDefined();
    } catch (const YAML::Exception&) {
      onnxPlan = false;
    }
  }
  // The operator-level search's plan stays search_mode auto with every op it chose configured:
  // the search keeps configured ops, and Reshapes are finished as that mode finishes them.
  const ParallelSettings& written = settings;
  const bool structural = graph.search && graph.search->configuration;
  if (!onnxPlan && !structural && root.IsMap() && root["ops"].IsSequence()) {
    text = modelPlanText(root, graph, written);
    return std::nullopt;
  }
  if (!onnxPlan) {
    // A YAML model or an ONNX file given alone: the graph as a model with the plan written in.
    Graph plan = graph;
    for (OpId id : plan.order)
      if (searched(plan.op(id))) plan.op(id).annotation->inStrategy = strategyOf(plan.op(id));
    text = writePlanModelYaml(plan, written);
    return std::nullopt;
  }
  // The plan over its ONNX graph, as given, with the search's choices as node strategies.
  namespace fs = std::filesystem;
  fs::path graphPath = fs::path(modelPath).parent_path() / root["graph"].as<std::string>();
  fs::path outDir = fs::absolute(fs::path(outPath)).parent_path();
  root["graph"] = fs::relative(fs::absolute(graphPath), outDir).generic_string();
  applyCommandLineSettings(root, written);
  if (structural) writeStructuralSettings(root, graph, written);
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    // The search's choices: the operator-level one's, or the structural one's seeds.
    std::optional<ShardStrategy> strategy;
    if (searched(op)) strategy = strategyOf(op);
    else if (structural && op.annotation->inStrategy) strategy = *op.annotation->inStrategy;
    if (!strategy) continue;
    YAML::Node entry;
    entry["in_strategy"] = strategyNode(*strategy);
    root["strategies"][op.name] = entry;
  }
  YAML::Emitter out;
  out << root;
  text = std::string(out.c_str()) + "\n";
  return std::nullopt;
}

}  // namespace irc::cli
