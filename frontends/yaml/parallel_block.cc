// The `parallel` block of a model or plan (spec/model-format.md): the device count or mesh,
// the search and redistribution modes, training, optimizer, precision, pipeline and cost model.
#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontends/yaml/model_loader.h"
#include "frontends/yaml/sharding_reader.h"
#include "frontends/document/yaml_reader.h"
#include "ir/byte_size.h"
#include "ir/limits.h"

namespace irc::model_loading {

const std::vector<std::string> kParallelKeys = {"device_num",
                                                "global_rank",
                                                "search_mode",
                                                "fully_use_devices",
                                                "factor_strategy",
                                                "enable_alltoall",
                                                "redistribution",
                                                "device_matrix",
                                                "alias_name",
                                                "training",
                                                "strategy_ckpt_load",
                                                "mesh",
                                                "optimizer",
                                                "gradient_buffer",
                                                "optimizer_kernels",
                                                "memory_budget",
                                                "enable_parallel_optimizer",
                                                "optimizer_level",
                                                "parallel_optimizer_threshold",
                                                "cost_model",
                                                "search_time_limit",
                                                "pipeline_stages",
                                                "micro_batches",
                                                "virtual_stages",
                                                "pipeline_schedule",
                                                "recompute_layers",
                                                "precision",
                                                "input_batch",
                                                "zero_stage",
                                                "data_parallel",
                                                "model_parallel",
                                                "expert_parallel",
                                                "context_parallel",
                                                "expert_tensor_parallel",
                                                "sequence_parallel"};
const std::vector<std::string> kCostModelKeys = {"alpha", "beta", "gamma", "peak_flops", "memory_bandwidth"};

// MindFormers' parallel degrees (a config.json plan's; their checks against the model and the
// device count are the graph builder's, frontends/hf_config/parallel_degrees.cc).
void ModelLoader::readDegrees(const YamlNode& node) {
  ParallelDims& d = parallel_.degrees;
  DegreeLocations& at = parallel_.degreesAt;
  for (auto [key, value, loc] : {std::tuple{"data_parallel", &d.dp, &at.dp},
                                 {"model_parallel", &d.tp, &at.tp},
                                 {"expert_parallel", &d.ep, &at.ep},
                                 {"context_parallel", &d.cp, &at.cp},
                                 {"expert_tensor_parallel", &d.etp, &at.etp}})
    if (auto n = reader_.optional(node, key))
      if (auto v = reader_.integer(*n, key)) {
        if (*v < 1 || *v > kMaxDeviceNum) {
          reader_.error(*n, fmt::format("{} must be in 1 .. {}; got {}", key, kMaxDeviceNum, *v));
          continue;
        }
        *value = *v;
        *loc = locOf(*n);
      }
  if (auto n = reader_.optional(node, "sequence_parallel"))
    if (auto b = reader_.boolean(*n, "sequence_parallel")) {
      d.sp = *b;
      at.sp = locOf(*n);
    }
}

void ModelLoader::readParallel(const YamlNode& node) {
  // MindFormers' parallel_config and Megatron's argument spellings of the degrees, said as irc's keys.
  static const std::map<std::string, YamlReader::OtherSpelling> kFrameworkSpellings = {
      {"pipeline_stage", {"pipeline_stages", "MindFormers'"}},
      {"micro_batch_num", {"micro_batches", "MindFormers'"}},
      {"use_seq_parallel", {"sequence_parallel", "MindFormers'"}},
      {"expert_model_parallel_size", {"expert_parallel", "Megatron's"}},
      {"tensor_model_parallel_size", {"model_parallel", "Megatron's"}},
      {"pipeline_model_parallel_size", {"pipeline_stages", "Megatron's"}},
      {"context_parallel_size", {"context_parallel", "Megatron's"}},
      {"expert_tensor_parallel_size", {"expert_tensor_parallel", "Megatron's"}},
      {"virtual_pipeline_model_parallel_size", {"virtual_stages", "Megatron's"}}};
  if (!reader_.checkMap(node, "'parallel'", kParallelKeys, kFrameworkSpellings)) return;
  parallel_.loc = locOf(node);
  std::optional<DeviceMatrix> named;
  bool namedOk = true;
  if (auto m = reader_.optional(node, "mesh")) {
    named = readNamedMesh(*m);
    namedOk = named.has_value();
    for (const char* key : {"device_matrix", "alias_name"})
      if (auto clash = reader_.optional(node, key)) {
        reader_.error(*clash, fmt::format("'parallel' gives both mesh and {}; the mesh names its axes itself", key));
        namedOk = false;
      }
  }
  bool deviceNumOk = readDeviceCount(node, named);
  readParallelSettings(node);
  if (named || !namedOk) {
    parallelOk_ = deviceNumOk && namedOk;
    if (parallelOk_) parallel_.mesh = named;
    return;
  }
  parallelOk_ = readMesh(node, deviceNumOk);
}

// `mesh: {dp: 2, tp: 4}`: DTensor's named device mesh, axes major first (ranks row-major).
std::optional<DeviceMatrix> ModelLoader::readNamedMesh(const YamlNode& node) {
  if (!node.IsMap() || node.size() == 0) {
    reader_.error(node, fmt::format("mesh must map axis names to sizes (mesh: {{dp: 2, tp: 4}}); got {}", describeNode(node)));
    return std::nullopt;
  }
  DeviceMatrix mesh;
  bool ok = true;
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string name = it->first.Scalar();
    auto size = reader_.integer(it->second, fmt::format("mesh.{}", name));
    if (size && (*size < 1 || *size > kMaxDeviceNum)) {
      reader_.error(it->second, fmt::format("mesh.{} must be in 1 .. {}; got {}", name, kMaxDeviceNum, *size));
      size.reset();
    }
    if (name == "None") {
      reader_.error(it->first, "mesh axis 'None' is reserved (it means not split)");
      size.reset();
    }
    if (!size) {
      ok = false;
      continue;
    }
    mesh.dims.push_back(*size);
    mesh.names.push_back(name);
  }
  if (ok && (!checkedProduct(mesh.dims) || mesh.deviceCount() > kMaxDeviceNum)) {
    reader_.error(node,
                  fmt::format("mesh {} has more than {} devices (docs/limits.md)", formatIntTuple(mesh.dims), kMaxDeviceNum));
    ok = false;
  }
  if (!ok) return std::nullopt;
  return mesh;
}

// pipeline_stages, device_num and global_rank; false when they are unusable. device_num counts
// every stage's ranks; a mesh and every strategy one stage's (device_num / pipeline_stages).
bool ModelLoader::readDeviceCount(const YamlNode& node, const std::optional<DeviceMatrix>& mesh) {
  ParallelConfig& p = parallel_;
  bool ok = true;
  int64_t stages = 1;
  if (auto n = reader_.optional(node, "pipeline_stages")) {
    auto v = reader_.integer(*n, "pipeline_stages");
    if (v && (*v < 1 || *v > kMaxDeviceNum)) {
      reader_.error(*n, fmt::format("pipeline_stages must be in 1 .. {}; got {}", kMaxDeviceNum, *v));
      ok = false;
    } else if (v) {
      stages = *v;
    } else {
      ok = false;
    }
  }
  int64_t total = 0;
  if (!reader_.optional(node, "device_num") && reader_.optional(node, "mesh")) {
    // The mesh's product; a bad mesh was reported already (no second error for device_num).
    if (mesh) total = mesh->deviceCount() * stages;
    else ok = false;
  } else if (auto n = reader_.required(node, "device_num", "'parallel'")) {
    auto v = reader_.integer(*n, "device_num");
    if (v && (*v < 1 || *v > kMaxDeviceNum))
      reader_.error(*n, fmt::format("device_num must be in 1 .. {} (docs/limits.md); got {}", kMaxDeviceNum, *v));
    if (v && *v >= 1 && *v <= kMaxDeviceNum) total = *v;
    else ok = false;
    if (ok && total % stages != 0) {
      reader_.error(
          *n, fmt::format("device_num {} is not a multiple of pipeline_stages {}: every stage has as many ranks", total, stages));
      ok = false;
    }
  } else {
    ok = false;
  }
  int64_t perStage = ok ? total / stages : 1;
  if (mesh && ok && perStage != mesh->deviceCount()) {
    reader_.error(*reader_.optional(node, "device_num"),
                  stages == 1 ? fmt::format("device_num is {}; the mesh {} has {} devices", total, formatIntTuple(mesh->dims),
                                            mesh->deviceCount())
                              : fmt::format("device_num is {} over {} pipeline stages ({} a stage); the mesh {} has {} devices",
                                            total, stages, perStage, formatIntTuple(mesh->dims), mesh->deviceCount()));
    ok = false;
  }
  if (ok) {
    p.deviceNum = perStage;
    p.pipelineStages = stages;
  }
  if (auto n = reader_.optional(node, "global_rank")) {
    auto v = reader_.integer(*n, "global_rank");
    int64_t ranks = ok ? total : p.deviceNum;
    if (v && (*v < 0 || *v >= ranks)) {
      reader_.error(*n, fmt::format("global_rank {} is not a rank of {} devices (valid: 0 .. {})", *v, ranks, ranks - 1));
      ok = false;
    } else if (v) {
      p.globalRank = *v;
    }
  }
  return ok;
}

// The optimizer, its kernels and gradient buffer, and optimizer parallel's level and threshold.
void ModelLoader::readOptimizerSettings(const YamlNode& node) {
  ParallelConfig& p = parallel_;
  if (auto n = reader_.optional(node, "optimizer"))
    if (auto s = reader_.choice(*n, "optimizer", optimizerNames())) p.optimizer = *parseOptimizer(*s);
  if (auto n = reader_.optional(node, "gradient_buffer"))
    if (auto s = reader_.choice(*n, "gradient_buffer", gradientBufferNames())) p.gradientBuffer = *parseGradientBuffer(*s);
  if (auto n = reader_.optional(node, "optimizer_kernels"))
    if (auto s = reader_.choice(*n, "optimizer_kernels", optimizerKernelsNames()))
      p.optimizerKernels = *parseOptimizerKernels(*s);
  if (auto n = reader_.optional(node, "enable_parallel_optimizer"))
    if (auto b = reader_.boolean(*n, "enable_parallel_optimizer"))
      p.parallelOptimizerLevel = *b ? 1 : 0, p.given.optimizerLevel = true;
  if (auto n = reader_.optional(node, "optimizer_level")) {
    static const std::vector<std::string> levels = {"level1", "level2", "level3"};
    if (auto s = reader_.choice(*n, "optimizer_level", levels)) {
      if (p.parallelOptimizerLevel == 0) reader_.error(*n, "optimizer_level needs enable_parallel_optimizer: true beside it");
      else p.parallelOptimizerLevel = (*s)[5] - '0';
    }
  }
  if (auto n = reader_.optional(node, "parallel_optimizer_threshold"))
    if (auto v = reader_.number(*n, "parallel_optimizer_threshold")) {
      if (*v < 0) reader_.error(*n, fmt::format("parallel_optimizer_threshold is in KiB and must be >= 0; got {}", *v));
      else p.parallelOptimizerThresholdKiB = *v;
    }
}

// The micro-batches, virtual stages, schedule and per-stage recompute of a pipeline.
void ModelLoader::readPipelineSettings(const YamlNode& node) {
  ParallelConfig& p = parallel_;
  if (auto n = reader_.optional(node, "micro_batches"))
    if (auto v = reader_.integer(*n, "micro_batches")) {
      if (*v < 1 || *v > kMaxDeviceNum)
        reader_.error(*n, fmt::format("micro_batches must be in 1 .. {}; got {}", kMaxDeviceNum, *v));
      else p.microBatches = *v, p.given.microBatches = true;
    }
  if (auto n = reader_.optional(node, "virtual_stages"))
    if (auto v = reader_.integer(*n, "virtual_stages")) {
      if (*v < 1 || *v > kMaxDeviceNum)
        reader_.error(*n, fmt::format("virtual_stages must be in 1 .. {}; got {}", kMaxDeviceNum, *v));
      else if (*v > 1 && p.pipelineStages <= 1)
        reader_.error(*n, fmt::format("virtual_stages {} interleaves pipeline stages: it needs pipeline_stages > 1", *v));
      else if (*v > 1 && p.microBatches % p.pipelineStages != 0)
        // Megatron's interleaved schedule runs micro-batches in groups of P (its own check).
        reader_.error(*n, fmt::format("virtual_stages {} needs micro_batches a multiple of pipeline_stages {}; got {} "
                                      "micro-batches (valid: {}, {}, ...)",
                                      *v, p.pipelineStages, p.microBatches, p.pipelineStages, 2 * p.pipelineStages));
      else p.virtualStages = *v;
    }
  p.pipelineSchedule = p.virtualStages > 1 ? PipelineSchedule::Interleaved : PipelineSchedule::OneFOneB;
  if (auto n = reader_.optional(node, "pipeline_schedule")) readPipelineSchedule(*n, p);
  if (auto n = reader_.optional(node, "recompute_layers")) readRecomputeLayers(*n, p);
}

// The search mode and the switches.
void ModelLoader::readParallelSettings(const YamlNode& node) {
  ParallelConfig& p = parallel_;
  if (auto n = reader_.optional(node, "search_mode"))
    if (auto s = reader_.choice(*n, "search_mode", searchModeNames())) p.searchMode = *parseSearchMode(*s);
  if (auto n = reader_.optional(node, "fully_use_devices"))
    if (auto b = reader_.boolean(*n, "fully_use_devices")) p.fullyUseDevices = *b;
  if (auto n = reader_.optional(node, "factor_strategy"))
    if (auto s = reader_.choice(*n, "factor_strategy", factorStrategyNames())) p.factorStrategy = *parseFactorStrategy(*s);
  if (auto n = reader_.optional(node, "strategy_ckpt_load"))
    if (auto s = reader_.string(*n, "strategy_ckpt_load")) p.strategyCkptLoad = *s;
  if (auto n = reader_.optional(node, "training"))
    if (auto b = reader_.boolean(*n, "training")) p.training = *b;
  readOptimizerSettings(node);
  if (auto n = reader_.optional(node, "memory_budget")) {
    std::string error;
    if (auto bytes = n->IsScalar() ? parseByteSize(n->Scalar(), error) : std::nullopt) p.memoryBudget = *bytes;
    else reader_.error(*n, fmt::format("memory_budget: {}", n->IsScalar() ? error : "must be a size such as 16GiB or 80e9"));
  }
  if (auto n = reader_.optional(node, "search_time_limit"))
    if (auto v = reader_.number(*n, "search_time_limit")) {
      if (!(*v > 0)) reader_.error(*n, fmt::format("search_time_limit is in seconds and must be > 0; got {}", *v));
      else p.searchTimeLimit = *v;
    }
  if (auto n = reader_.optional(node, "cost_model")) readCostModel(*n);
  readPipelineSettings(node);
  if (auto n = reader_.optional(node, "precision")) {
    // `auto`: the structural search's choice (plan/device_precision.h autoPrecisionCandidates); BF16 until it is made.
    std::vector<std::string> valid = precisionNames();
    valid.push_back("auto");
    if (auto s = reader_.choice(*n, "precision", valid)) {
      p.precisionAuto = *s == "auto";
      p.precision = p.precisionAuto ? Precision::Bf16Mixed : *parsePrecision(*s);
    }
  }
  readDegrees(node);
  if (auto n = reader_.optional(node, "zero_stage"))
    if (auto v = reader_.integer(*n, "zero_stage")) {
      if (*v < 0 || *v > 2)
        reader_.error(*n, fmt::format("zero_stage must be 0, 1 (optimizer states) or 2 (and gradients); got {} (the weights "
                                      "too: enable_parallel_optimizer)",
                                      *v));
      else p.zeroStage = static_cast<int>(*v), p.given.zeroStage = true;
    }
  if (auto n = reader_.optional(node, "input_batch"))
    if (auto s = reader_.choice(*n, "input_batch", {"micro_batch", "step"})) p.inputsHoldStep = *s == "step";
  if (auto n = reader_.optional(node, "enable_alltoall"))
    if (auto b = reader_.boolean(*n, "enable_alltoall")) p.enableAlltoall = *b;
  if (auto n = reader_.optional(node, "redistribution"))
    if (auto s = reader_.choice(*n, "redistribution", redistributionModeNames())) p.redistribution = *parseRedistributionMode(*s);
}

// `cost_model: {alpha, beta, gamma, peak_flops, memory_bandwidth}`: the machine plans are timed
// for (docs/search.md); each figure positive.
// `pipeline_schedule`: one irc builds, agreeing with the virtual stages (the interleaved schedule
// needs them, the others run one chunk a stage). MindSpore's and DeepSeek's other schedules are
// named as not built, not as unknown.
void ModelLoader::readPipelineSchedule(const YamlNode& node, ParallelSettings& p) {
  static const std::vector<std::string> notBuilt = {"zero_bubble_v", "dualpipe", "dualpipe_v",
                                                    "seqpipe",       "seqvpp",   "seqsmartvpp"};
  auto name = reader_.string(node, "pipeline_schedule");
  if (!name) return;
  if (std::find(notBuilt.begin(), notBuilt.end(), *name) != notBuilt.end()) {
    reader_.error(node, fmt::format("pipeline_schedule '{}' is not built in irc; valid: {}", *name,
                                    fmt::join(pipelineScheduleNames(), ", ")));
    return;
  }
  auto chosen = reader_.choice(node, "pipeline_schedule", pipelineScheduleNames());
  if (!chosen) return;
  const PipelineSchedule s = *parsePipelineSchedule(*chosen);
  if (s == PipelineSchedule::Interleaved && p.virtualStages <= 1)
    reader_.error(node, "pipeline_schedule interleaved_1f1b runs model chunks: it needs virtual_stages > 1");
  else if (s != PipelineSchedule::Interleaved && p.virtualStages > 1)
    reader_.error(node, fmt::format("pipeline_schedule {} runs one model chunk a stage: virtual_stages {} needs "
                                    "interleaved_1f1b",
                                    *chosen, p.virtualStages));
  else p.pipelineSchedule = s, p.pipelineScheduleGiven = true;
}

// `recompute_layers`: one count a stage (or one for every stage), each >= 0.
void ModelLoader::readRecomputeLayers(const YamlNode& node, ParallelSettings& p) {
  std::vector<int64_t> counts;
  if (node.IsSequence()) {
    auto list = reader_.intList(node, "recompute_layers");
    if (!list) return;
    counts = *list;
    if (static_cast<int64_t>(counts.size()) != p.pipelineStages) {
      reader_.error(node, fmt::format("recompute_layers lists {} stage{}; the pipeline has {} (one count a stage, or one "
                                      "number for every stage)",
                                      counts.size(), counts.size() == 1 ? "" : "s", p.pipelineStages));
      return;
    }
  } else if (auto n = reader_.integer(node, "recompute_layers")) {
    counts.assign(std::max<int64_t>(1, p.pipelineStages), *n);
  } else {
    return;
  }
  for (int64_t c : counts)
    if (c < 0) {
      reader_.error(node, fmt::format("recompute_layers counts layers and must be >= 0; got {}", c));
      return;
    }
  p.recomputeLayers = counts;
}

void ModelLoader::readCostModel(const YamlNode& node) {
  if (!reader_.checkMap(node, "'cost_model'", kCostModelKeys)) return;
  CostModel& m = parallel_.costModel;
  double* fields[] = {&m.alpha, &m.beta, &m.gamma, &m.peakFlops, &m.memoryBandwidth};
  for (size_t i = 0; i < kCostModelKeys.size(); ++i) {
    const std::string& key = kCostModelKeys[i];
    if (auto n = reader_.optional(node, key))
      if (auto v = reader_.number(*n, "cost_model." + key)) {
        auto [low, high] = costModelBounds(key);
        if (!(*v >= low && *v <= high))
          reader_.error(*n,
                        fmt::format("cost_model.{} is {}, outside what a machine does; valid: {:g} .. {:g}", key, *v, low, high));
        else *fields[i] = *v;
      }
  }
}

// The named mesh of layout-style annotations: device_matrix with alias_name. `deviceNumOk`:
// device_num was read (only then can the mesh be checked against it). Returns false when the
// parallel block is unusable: device_num was not, or the mesh is not.
bool ModelLoader::readMesh(const YamlNode& node, bool deviceNumOk) {
  ParallelConfig& p = parallel_;
  bool ok = deviceNumOk;
  auto dm = reader_.optional(node, "device_matrix");
  auto an = reader_.optional(node, "alias_name");
  if (dm) {
    auto dims = reader_.intList(*dm, "device_matrix");
    if (dims) {
      DeviceMatrix mesh = DeviceMatrix::unnamed(*dims);
      bool meshOk = !dims->empty();
      for (size_t i = 0; i < dims->size(); ++i)
        if ((*dims)[i] < 1) {
          reader_.error((*dm)[i], fmt::format("device_matrix entries must be >= 1; got {}", (*dims)[i]));
          meshOk = false;
        }
      if (dims->empty()) reader_.error(*dm, "device_matrix must have at least one axis");
      if (meshOk && !checkedProduct(*dims)) {
        reader_.error(*dm, fmt::format("device_matrix {}: the product of its entries does not fit a 64-bit integer; "
                                       "it must equal device_num {}",
                                       formatIntTuple(*dims), p.deviceNum));
        meshOk = false;
      }
      if (meshOk && ok && mesh.deviceCount() != p.deviceNum) {
        reader_.error(*dm, fmt::format("device_matrix {} has {} devices; device_num is {}", formatIntTuple(*dims),
                                       mesh.deviceCount(), p.deviceNum));
        meshOk = false;
      }
      if (an) {
        auto names = reader_.stringList(*an, "alias_name");
        if (names && names->size() != dims->size()) {
          reader_.error(*an, fmt::format("alias_name has {} names; device_matrix {} has {} axes", names->size(),
                                         formatIntTuple(*dims), dims->size()));
          meshOk = false;
        } else if (names) {
          std::set<std::string> seen;
          for (size_t i = 0; i < names->size(); ++i)
            if (!seen.insert((*names)[i]).second || (*names)[i] == "None") {
              reader_.error((*an)[i], fmt::format("alias '{}' is {}", (*names)[i],
                                                  (*names)[i] == "None" ? "reserved (it means not split)" : "given twice"));
              meshOk = false;
            }
          mesh.names = *names;
        } else {
          meshOk = false;
        }
      }
      if (meshOk) p.mesh = mesh;
      else ok = false;
    } else {
      ok = false;
    }
  } else if (an) {
    reader_.error(*an, "alias_name names the axes of device_matrix, which 'parallel' does not give");
    ok = false;
  }
  return ok;
}

}  // namespace irc::model_loading
