#include "dumps/model_yaml_writer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ir/dtype.h"
#include "ops/op_defs.h"

namespace irc {
namespace {

// A name as a YAML scalar: plain where YAML reads it back as the same string, else double-quoted
// (JSON's escaping is valid YAML).
std::string yamlName(const std::string& name) {
  bool plain = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_' || name[0] == '/');
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' || c == '-')) plain = false;
  static const char* const kReserved[] = {"true",  "false", "null", "yes",   "no",   "on",  "off", "True",
                                          "False", "Null",  "TRUE", "FALSE", "NULL", "Yes", "No",  "On",
                                          "Off",   "YES",   "NO",   "ON",    "OFF",  "y",   "n"};
  for (const char* r : kReserved)
    if (name == r) plain = false;
  return plain ? name : nlohmann::json(name).dump();
}

// Numbers as YAML reads them back exactly (the shortest round-tripping form; YAML's .inf/.nan).
std::string yamlNumber(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

std::string yamlInts(const IntTuple& t) { return fmt::format("[{}]", fmt::join(t, ", ")); }

std::string yamlAttribute(const Attribute& a) {
  struct Visitor {
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(int64_t v) const { return fmt::format("{}", v); }
    std::string operator()(double v) const { return yamlNumber(v); }
    std::string operator()(const std::string& v) const { return nlohmann::json(v).dump(); }
    std::string operator()(const IntTuple& v) const { return yamlInts(v); }
    std::string operator()(DType v) const { return std::string(modelName(v)); }
    std::string operator()(const ScalarTensor& v) const { return yamlNumber(v.value); }
  };
  return std::visit(Visitor{}, a);
}

std::string valueRef(const Graph& g, ValueId id) {
  const Value& v = g.value(id);
  if (v.producer == kNoId) return yamlName(v.name);
  const std::string& op = g.op(v.producer).name;
  return yamlName(v.resultIndex == 0 ? op : fmt::format("{}:{}", op, v.resultIndex));
}

void writeTensors(std::string& out, const Graph& g, const std::vector<ValueId>& ids, const char* section) {
  if (ids.empty()) return;
  out += fmt::format("{}:\n", section);
  for (ValueId id : ids) {
    const Value& v = g.value(id);
    out += fmt::format("  - {{name: {}, shape: {}, dtype: {}}}\n", yamlName(v.name), yamlInts(v.type.shape),
                       modelName(v.type.dtype));
  }
}

void writeOp(std::string& out, const Graph& g, const Op& op) {
  const OpDef& def = defOf(op);
  std::vector<std::string> inputs;
  for (const Operand& o : op.operands) inputs.push_back(o.isValue() ? valueRef(g, o.value) : yamlAttribute(*o.constant));
  out += fmt::format("  - {{name: {}, type: {}, inputs: [{}]", yamlName(op.name), op.type, fmt::join(inputs, ", "));
  std::vector<std::string> attrs;
  for (const AttrSpec& spec : def.attrs) {
    auto it = op.attrs.find(spec.name);
    if (it == op.attrs.end() || (spec.defaultValue && *spec.defaultValue == it->second)) continue;
    attrs.push_back(fmt::format("{}: {}", spec.name, yamlAttribute(it->second)));
  }
  if (!attrs.empty()) out += fmt::format(", attrs: {{{}}}", fmt::join(attrs, ", "));
  if (op.annotation->inStrategy) {
    std::vector<std::string> tuples;
    for (const IntTuple& t : *op.annotation->inStrategy) tuples.push_back(yamlInts(t));
    out += fmt::format(", in_strategy: [{}]", fmt::join(tuples, ", "));
  }
  out += "}\n";
}

// Inputs, parameters, ops and outputs. Without outputs (a dump excerpt without its Return) the
// model's unused results are.
void writeGraph(std::string& out, const Graph& graph) {
  writeTensors(out, graph, graph.inputs, "inputs");
  writeTensors(out, graph, graph.parameters, "parameters");
  out += "ops:\n";
  for (OpId id : graph.order) writeOp(out, graph, graph.op(id));
  std::vector<std::string> outputs;
  for (ValueId v : graph.outputs) outputs.push_back(valueRef(graph, v));
  if (!outputs.empty()) out += fmt::format("outputs: [{}]\n", fmt::join(outputs, ", "));
}

// `dispatch` is written where it is eager (a YAML model's default is graph) or when asked: a
// plan over an ONNX graph defaults to eager, so its plan file says which.
std::string clusterYaml(const ClusterDescription& c, bool writeDispatch = false) {
  const DeviceFigures& d = c.device;
  // A rate the device lacks (Ascend 910B has no TF32) is left out: 0 FLOP/s is not a figure.
  std::string peaks = fmt::format("{{fp32: {}", yamlNumber(d.fp32Flops));
  if (d.tf32Flops > 0) peaks += fmt::format(", tf32: {}", yamlNumber(d.tf32Flops));
  peaks += fmt::format(", bf16: {}", yamlNumber(d.bf16Flops));
  if (d.fp8Flops > 0) peaks += fmt::format(", fp8: {}", yamlNumber(d.fp8Flops));
  if (d.fp4Flops > 0) peaks += fmt::format(", fp4: {}", yamlNumber(d.fp4Flops));
  peaks += "}";
  std::string out = "cluster: {";
  if (!c.preset.empty()) out += fmt::format("preset: {}, ", c.preset);
  if (c.nvlinkDomain > 0) out += fmt::format("nvlink_domain: {}, ", c.nvlinkDomain);
  out += fmt::format(
      "devices_per_node: {}, peak_flops: {}, hbm_bytes: {}, hbm_bandwidth: {}, compute_units: {}, "
      "intra_node_bandwidth: {}, intra_node_latency: {}, nics_per_node: {}, nic_gbps: {}, inter_node_latency: {}, "
      "gemm_efficiency: {}, memory_efficiency: {}, intra_node_efficiency: {}, inter_node_efficiency: {}, "
      "kernel_launch_seconds: {}, fused_attention: {}}}\n",
      c.devicesPerNode, peaks, yamlNumber(d.hbmBytes), yamlNumber(d.hbmBandwidth), d.computeUnits,
      yamlNumber(c.intraNodeBandwidth), yamlNumber(c.intraNodeLatency), c.nicsPerNode, yamlNumber(c.nicGbps),
      yamlNumber(c.interNodeLatency), yamlNumber(c.gemmEfficiency), yamlNumber(c.memoryEfficiency),
      yamlNumber(c.intraNodeEfficiency), yamlNumber(c.interNodeEfficiency), yamlNumber(c.kernelLaunchSeconds),
      c.fusedAttention ? "true" : "false");
  if (writeDispatch || c.dispatch == Dispatch::Eager) {
    out.pop_back();  // the newline
    out.pop_back();  // the closing brace
    out += fmt::format(", dispatch: {}, host_op_seconds: {}}}\n", dispatchName(c.dispatch), yamlNumber(c.hostOpSeconds));
  }
  return out;
}

std::string stagesYaml(const Graph& graph, int64_t pipelineStages) {
  std::string out;
  for (const auto& [name, stage] : stageEntries(graph, pipelineStages)) out += fmt::format("  {}: {}\n", yamlName(name), stage);
  return out.empty() ? out : "stages:\n" + out;
}

std::string recomputeYaml(const Graph& graph) {
  std::vector<std::vector<std::string>> entries = recomputeEntries(graph);
  if (entries.empty()) return "";
  std::string out = "recompute:\n";
  for (const std::vector<std::string>& names : entries) {
    std::vector<std::string> quoted;
    for (const std::string& n : names) quoted.push_back(nlohmann::json(n).dump());
    out += names.size() == 1 && names[0].ends_with('*') ? fmt::format("  - {}\n", quoted[0])
                                                        : fmt::format("  - [{}]\n", fmt::join(quoted, ", "));
  }
  return out;
}

// A model written from a torch graph keeps torch's training conventions (docs/memory.md): the
// keys where they differ from a YAML model's defaults.
std::string trainingConventions(const ParallelSettings& s) {
  std::string out;
  ParallelSettings yamlDefaults;
  if (s.gradientBuffer != yamlDefaults.gradientBuffer)
    out += fmt::format(", gradient_buffer: {}", gradientBufferName(s.gradientBuffer));
  if (s.optimizerKernels != yamlDefaults.optimizerKernels)
    out += fmt::format(", optimizer_kernels: {}", optimizerKernelsName(s.optimizerKernels));
  return out;
}

// What else decides the plan's compile, where it differs from the defaults: a plan written
// back must compile to the same dumps and totals (the redistribution planner, how propagation
// fills the ops the plan leaves open, the cost model the planner and the estimates use).
std::string compileChoices(const ParallelSettings& s) {
  std::string out;
  ParallelSettings defaults;
  if (s.globalRank != defaults.globalRank) out += fmt::format(", global_rank: {}", s.globalRank);
  if (s.redistribution != defaults.redistribution)
    out += fmt::format(", redistribution: {}", redistributionModeName(s.redistribution));
  if (s.factorStrategy != defaults.factorStrategy)
    out += fmt::format(", factor_strategy: {}", factorStrategyName(s.factorStrategy));
  if (s.enableAlltoall) out += ", enable_alltoall: true";
  const CostModel& c = s.costModel;
  const CostModel& d = defaults.costModel;
  std::string cost;
  auto field = [&](const char* key, double value, double byDefault) {
    if (value != byDefault) cost += fmt::format("{}{}: {}", cost.empty() ? "" : ", ", key, yamlNumber(value));
  };
  field("alpha", c.alpha, d.alpha);
  field("beta", c.beta, d.beta);
  field("gamma", c.gamma, d.gamma);
  field("peak_flops", c.peakFlops, d.peakFlops);
  field("memory_bandwidth", c.memoryBandwidth, d.memoryBandwidth);
  if (!cost.empty()) out += fmt::format(", cost_model: {{{}}}", cost);
  return out;
}

}  // namespace

std::string compileChoicesYaml(const ParallelSettings& settings) {
  std::string choices = compileChoices(settings);
  return "{" + (choices.empty() ? std::string() : choices.substr(2)) + "}";
}

std::string clusterBlockYaml(const ClusterDescription& cluster) { return clusterYaml(cluster, true); }

std::vector<std::pair<std::string, int32_t>> stageEntries(const Graph& graph, int64_t pipelineStages) {
  std::vector<std::pair<std::string, int32_t>> out;
  auto virtualStage = [&](const Op& op) { return static_cast<int32_t>(op.chunk * pipelineStages + op.stage); };
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    int32_t latest = 0;
    for (const Operand& o : op.operands)
      if (o.isValue() && graph.value(o.value).producer != kNoId)
        latest = std::max(latest, virtualStage(graph.op(graph.value(o.value).producer)));
    if (virtualStage(op) != latest) out.emplace_back(op.name, virtualStage(op));
  }
  return out;
}

std::vector<std::vector<std::string>> recomputeEntries(const Graph& graph) {
  std::map<int32_t, std::vector<const Op*>> checkpoints;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (!op.inserted() && op.annotation->recompute) checkpoints[op.annotation->checkpoint].push_back(&op);
  }
  std::vector<std::vector<std::string>> out;
  for (const auto& [checkpoint, ops] : checkpoints) {
    std::string prefix = ops.front()->name;
    for (const Op* op : ops)
      prefix.resize(std::mismatch(prefix.begin(), prefix.end(), op->name.begin(), op->name.end()).first - prefix.begin());
    // The prefix's glob when it names exactly the checkpoint's ops.
    size_t matched = 0;
    bool exact = !prefix.empty() && prefix.find_first_of("*?[") == std::string::npos;
    for (OpId id : graph.order) {
      const Op& op = graph.op(id);
      if (op.inserted() || !op.name.starts_with(prefix)) continue;
      ++matched;
      exact = exact && op.annotation->recompute && op.annotation->checkpoint == checkpoint;
    }
    if (exact && matched == ops.size()) {
      out.push_back({prefix + "*"});
      continue;
    }
    std::vector<std::string> names;
    for (const Op* op : ops) names.push_back(op->name);
    out.push_back(std::move(names));
  }
  return out;
}

std::string writePlanModelYaml(const Graph& graph, const ParallelSettings& s) {
  std::string out = fmt::format("name: {}\n", yamlName(graph.name));
  out += fmt::format(
      "parallel: {{device_num: {}, search_mode: {}, fully_use_devices: {}, training: {}, optimizer: {}, precision: {}",
      s.rankCount(), searchModeName(s.searchMode), s.fullyUseDevices ? "true" : "false", s.training ? "true" : "false",
      optimizerName(s.optimizer), precisionName(s.precision));
  if (s.pipelineStages > 1) out += fmt::format(", pipeline_stages: {}", s.pipelineStages);
  if (s.pipelineStages > 1 || s.microBatches > 1) out += fmt::format(", micro_batches: {}", s.microBatches);
  if (s.virtualStages > 1) out += fmt::format(", virtual_stages: {}", s.virtualStages);
  if (s.pipelineStages > 1 && traitsOf(s.schedule()).named)
    out += fmt::format(", pipeline_schedule: {}", pipelineScheduleName(s.schedule()));
  if (!s.recomputeLayers.empty()) out += fmt::format(", recompute_layers: [{}]", fmt::join(s.recomputeLayers, ", "));
  out += compileChoices(s);
  if (s.parallelOptimizerLevel > 0)
    out += fmt::format(", enable_parallel_optimizer: true, optimizer_level: level{}, parallel_optimizer_threshold: {}",
                       s.parallelOptimizerLevel, yamlNumber(s.parallelOptimizerThresholdKiB));
  if (s.zeroStage > 0) out += fmt::format(", zero_stage: {}", s.zeroStage);
  if (s.memoryBudget > 0) out += fmt::format(", memory_budget: {}", yamlNumber(s.memoryBudget));
  out += trainingConventions(s);
  out += "}\n";
  if (s.cluster) out += clusterYaml(*s.cluster);
  writeGraph(out, graph);
  // The plan is written before stage assignment runs: `stages: auto` assigns them again, the same way.
  out += s.autoStages && s.pipelineStages > 1 ? "stages: auto\n" : stagesYaml(graph, s.pipelineStages);
  out += recomputeYaml(graph);
  return out;
}

std::string writeModelYaml(const Graph& graph, const ParallelSettings& parallel) {
  std::string out;
  out += fmt::format("name: {}\n", yamlName(graph.name));
  out += fmt::format("parallel: {{device_num: {}, search_mode: {}{}}}\n", parallel.deviceNum, searchModeName(parallel.searchMode),
                     trainingConventions(parallel));
  writeGraph(out, graph);
  return out;
}

}  // namespace irc
