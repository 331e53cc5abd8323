// A plan file (docs/onnx.md): the model format with `graph: FILE.onnx` in place of inputs,
// parameters, ops and outputs. The graph comes from the ONNX file; the plan adds `parallel`,
// `dims` for the file's symbolic input dims, `strategies` keyed by node name or glob, and
// `sharding` of graph inputs and parameters by tensor name.
#include <fnmatch.h>

#include <algorithm>

#include <map>

#include <fmt/format.h>

#include "frontends/model_text.h"
#include "frontends/yaml/model_loader.h"
#include "frontends/onnx/onnx_frontend.h"
#include "frontends/yaml/sharding_reader.h"
#include "ir/suggest.h"

namespace irc::model_loading {
namespace {

const std::vector<std::string> kPlanKeys = {"name",     "graph",     "dims",   "parallel", "modules",  "strategies",
                                            "sharding", "recompute", "stages", "cluster",  "unlisted", "moe"};
const std::vector<std::string> kPlanStrategyKeys = {"in_strategy", "out_strategy", "in_layout",
                                                    "out_layout",  "priority",     "sharding"};

}  // namespace

std::string closestNames(const std::string& key, const std::vector<std::string>& names) {
  std::string plain;
  for (char c : key)
    if (c != '*' && c != '?') plain += c;
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& n : names) scored.emplace_back(editDistance(plain, n), n);
  size_t keep = std::min<size_t>(3, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + keep, scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < keep; ++i) out.push_back("'" + scored[i].second + "'");
  return out.empty() ? "the graph has no ops" : "closest: " + joinNames(out);
}

bool PlanReader::readPlanDims(const YamlNode& node, std::map<std::string, int64_t>& dims) {
  if (!node.IsMap()) {
    reader_.error(node,
                  fmt::format("dims must map symbolic dim names to sizes (dims: {{batch: 8}}); got {}", describeNode(node)));
    return false;
  }
  bool ok = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    auto size = reader_.integer(it->second, fmt::format("dims.{}", it->first.Scalar()));
    if (!size || *size < 1) {
      if (size) reader_.error(it->second, fmt::format("dims.{} must be >= 1; got {}", it->first.Scalar(), *size));
      ok = false;
      continue;
    }
    dims.emplace(it->first.Scalar(), *size);  // a `--dim` binding already there wins
  }
  return ok;
}

std::optional<LoadedGraph> PlanReader::read(const YamlNode& root) {
  reader_.checkMap(root, "the plan", kPlanKeys);
  auto graphNode = reader_.optional(root, "graph");
  auto file = reader_.string(*graphNode, "graph");
  std::map<std::string, int64_t> dims = options_.dims;
  if (auto d = reader_.optional(root, "dims")) readPlanDims(*d, dims);
  // The plan's graph is a torch model's: it trains as torch does unless the block says otherwise.
  parallel_.gradientBuffer = GradientBuffer::Freed;
  parallel_.optimizerKernels = OptimizerKernels::ForLoop;
  if (auto p = reader_.required(root, "parallel", "the plan")) blocks_.readParallel(*p);
  if (auto c = reader_.optional(root, "cluster")) blocks_.readCluster(*c);
  if (!file || reader_.diags().hasErrors()) return std::nullopt;

  std::string path = *file;
  if (!path.empty() && path[0] != '/' && !options_.modelDir.empty()) path = options_.modelDir + "/" + path;
  std::string readError;
  auto bytes = readModelText(path, readError);  // at most kMaxModelBytes: a plan naming /dev/zero is refused
  if (!bytes) {
    reader_.error(*graphNode, readError);
    return std::nullopt;
  }
  const bool config = isConfigFile(path);
  if (parallel_.degreesAt.any() && !config) {
    reader_.diags().error(parallel_.loc,
                          "data_parallel, model_parallel, expert_parallel, expert_tensor_parallel, "
                          "context_parallel and sequence_parallel are a config.json plan's degrees (graph: config.json); over an "
                          "ONNX graph give strategies or modules:");
    return std::nullopt;
  }
  auto moe = reader_.optional(root, "moe");
  if (moe && !config) {
    reader_.error(*moe, "moe: sets a config.json's mixture-of-experts routing (graph: config.json)");
    return std::nullopt;
  }
  // A torch export runs in eager PyTorch unless the cluster block says otherwise; a config.json's
  // decoder is planned as Megatron-Core or MindFormers run it (compiled, or long kernels).
  if (!config && parallel_.cluster) {
    auto c = reader_.optional(root, "cluster");
    if (!reader_.optional(*c, "dispatch")) parallel_.cluster->dispatch = Dispatch::Eager;
  }
  if (!(config ? loadConfigGraph(*graphNode, *file, *bytes, dims, moe) : loadOnnxGraph(*graphNode, *file, path, *bytes, dims)))
    return std::nullopt;
  if (auto n = reader_.optional(root, "name"))
    if (auto s = reader_.string(*n, "name")) graph_.name = *s;
  if (blocks_.parallelOk_) {
    if (auto s = reader_.optional(root, "sharding")) applyPlanShardings(*s);
    // A node is configured once: by a module's style or by its name.
    std::vector<std::string> claimedBy(graph_.ops.size());
    if (auto m = reader_.optional(root, "modules")) {
      applyPlanModules(*m, claimedBy);
      // Ops no style names run as DTensor runs them, unless the plan lets propagation fill them.
      parallel_.modulesAsDTensor = true;
      if (auto u = reader_.optional(root, "unlisted"))
        if (auto choice = reader_.choice(*u, "unlisted", {"dtensor", "propagate"}))
          parallel_.modulesAsDTensor = *choice == "dtensor";
    } else if (auto u = reader_.optional(root, "unlisted")) {
      reader_.error(*u, "unlisted says how ops no module style names are sharded; the plan has no modules:");
    }
    if (auto s = reader_.optional(root, "strategies")) applyPlanStrategies(*s, claimedBy);
    if (auto r = reader_.optional(root, "recompute")) blocks_.applyPlanRecompute(*r);
    // Stages the degrees assigned stand unless the plan gives its own.
    if (auto stages = reader_.optional(root, "stages"); stages || !degreeStages_) blocks_.readStages(stages);
  }
  return blocks_.finish();
}

bool PlanReader::loadOnnxGraph(const YamlNode& graphNode, const std::string& file, const std::string& path,
                               const std::string& bytes, const std::map<std::string, int64_t>& dims) {
  DiagnosticEngine onnxDiags(path, "");
  OnnxOptions onnxOptions;
  onnxOptions.defaultName = modelStem(file);
  onnxOptions.dims = dims;
  onnxOptions.checkShapesWithOnnx = options_.onnxShapeCheck;
  onnxOptions.opaqueUnsupported = options_.opaqueUnsupported;
  onnxOptions.keepParameterData = options_.keepParameterData;
  if (auto slash = path.rfind('/'); slash != std::string::npos) onnxOptions.externalDataDir = path.substr(0, slash);
  auto onnx = loadOnnxModel(bytes, onnxDiags, onnxOptions);
  if (!onnx) {
    // The ONNX file's problems, each located in it, reported at the plan's `graph:` line.
    for (const Diagnostic& d : onnxDiags.diagnostics())
      reader_.error(graphNode, fmt::format("{}{}: {}", file, d.loc.valid() ? ":" + formatLoc(d.loc) : "", d.message));
    return false;
  }
  // Warnings of the ONNX load (shapes-only external data) at the plan's `graph:` line.
  for (const Diagnostic& d : onnxDiags.diagnostics())
    if (d.severity == Severity::Warning)
      reader_.diags().warning(locOf(graphNode),
                              fmt::format("{}{}: {}", file, d.loc.valid() ? ":" + formatLoc(d.loc) : "", d.message));
  blocks_.parameterData_ = std::move(onnx->parameterData);
  graph_ = std::move(onnx->graph);
  return true;
}

// `strategies: {"*/attn/c_attn/MatMul": {in_strategy: ...}}`: each key names ops by their node
// name, exactly or as a glob (`*` also crosses `/`); a key matching nothing, or two keys
// matching one op, is an error.
void PlanReader::applyPlanStrategies(const YamlNode& node, std::vector<std::string>& claimedBy) {
  if (!node.IsMap()) {
    reader_.error(node, fmt::format("strategies must map node names (or globs) to strategies; got {}", describeNode(node)));
    return;
  }
  std::vector<std::string> opNames;
  for (const Op& op : graph_.ops) opNames.push_back(op.name);
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const YamlNode& entry = it->second;
    if (!reader_.checkMap(entry, fmt::format("the strategy of '{}'", key), kPlanStrategyKeys)) continue;
    std::vector<OpId> matched;
    for (OpId id = 0; id < static_cast<OpId>(graph_.ops.size()); ++id)
      if (graph_.ops[id].name == key || fnmatch(key.c_str(), graph_.ops[id].name.c_str(), 0) == 0) matched.push_back(id);
    if (matched.empty()) {
      reader_.error(it->first,
                    fmt::format("strategies key '{}' matches no node of the graph; {}", key, closestNames(key, opNames)));
      continue;
    }
    for (OpId id : matched) {
      if (!claimedBy[id].empty()) {
        reader_.error(it->first, fmt::format("node '{}' is matched by both '{}' and '{}'; give each node one strategy",
                                             graph_.ops[id].name, claimedBy[id], key));
        continue;
      }
      claimedBy[id] = key;
      OpSource src{id, entry, true, true};
      blocks_.readAnnotations(src);
    }
  }
}

// `sharding: {input_ids: {tensor_map: ...}}`: graph inputs and parameters (initializers) by name.
void PlanReader::applyPlanShardings(const YamlNode& node) {
  if (!node.IsMap()) {
    reader_.error(node, fmt::format("sharding must map tensor names to shardings; got {}", describeNode(node)));
    return;
  }
  std::vector<std::string> names;
  std::map<std::string, ValueId> byName;
  for (const auto* list : {&graph_.inputs, &graph_.parameters})
    for (ValueId v : *list) {
      names.push_back(graph_.value(v).name);
      byName[graph_.value(v).name] = v;
    }
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string name = it->first.Scalar();
    auto found = byName.find(name);
    if (found == byName.end()) {
      reader_.error(it->first, fmt::format("sharding names '{}', which is not a graph input or a parameter read by an op{}", name,
                                           didYouMean(name, names)));
      continue;
    }
    Value& v = graph_.value(found->second);
    v.sharding = readTensorSharding(reader_, it->second, {v.name, v.type.shape}, parallel_);
  }
}

}  // namespace irc::model_loading
