#include "frontends/yaml/yaml_frontend.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/exceptions.h>

#include "frontends/yaml/model_loader.h"
#include "frontends/yaml/sharding_reader.h"
#include "frontends/yaml/yaml_reader.h"
#include "ir/int_text.h"
#include "ir/byte_size.h"
#include "ir/limits.h"
#include "ir/names.h"
#include "ops/op_defs.h"
#include "ops/shape_inference.h"
#include "ir/suggest.h"
#include "ir/topology.h"

namespace irc::model_loading {

const std::vector<std::string> kTopKeys = {"name", "parallel", "cluster", "inputs",   "parameters",
                                           "ops",  "outputs",  "stages",  "recompute"};
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
                                                "memory_budget",
                                                "enable_parallel_optimizer",
                                                "optimizer_level",
                                                "parallel_optimizer_threshold",
                                                "cost_model",
                                                "search_time_limit",
                                                "pipeline_stages",
                                                "micro_batches",
                                                "precision",
                                                "input_batch",
                                                "zero_stage"};
const std::vector<std::string> kCostModelKeys = {"alpha", "beta", "gamma", "peak_flops", "memory_bandwidth"};
const std::vector<std::string> kTensorKeys = {"name", "shape", "dtype", "sharding"};
const std::vector<std::string> kOpKeys = {"name",      "type",       "inputs",   "attrs",    "in_strategy", "out_strategy",
                                          "in_layout", "out_layout", "priority", "sharding", "ms_name",     "recompute"};

// Where the second YAML document of `text` starts: the line that opens it (`---`), else its
// node's mark.
SourceLoc secondDocumentLoc(const std::string& text, const YamlNode& second) {
  int line = 1, markers = 0, firstContentLine = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    std::string_view l(text.data() + start, (end == std::string::npos ? text.size() : end) - start);
    bool marker = l.rfind("---", 0) == 0;
    bool content = !l.empty() && l[0] != '#' && l.find_first_not_of(" \t\r") != std::string_view::npos;
    if (marker && (++markers == 2 || firstContentLine > 0)) return {line, 1};
    if (content && !marker && firstContentLine == 0) firstContentLine = line;
    if (end == std::string::npos) break;
    start = end + 1;
    ++line;
  }
  if (second.Mark().line >= 0) return {second.Mark().line + 1, second.Mark().column + 1};
  return {1, 1};
}

std::optional<Graph> ModelLoader::load(const std::string& text) {
  // YAML text never holds C0 control bytes but TAB, LF and CR (the spec's c-printable), and
  // yaml-cpp loops forever on a NUL: refuse them before parsing.
  int line = 1, col = 1;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7F) {
      reader_.diags().error({line, col}, fmt::format("the file contains the control byte 0x{:02X}; a model is YAML text "
                                                     "(only tab, line feed and carriage return among control characters)",
                                                     u));
      return std::nullopt;
    }
    if (c == '\n') ++line, col = 1;
    else ++col;
  }
  // One parse through yaml-cpp's event parser into our own compact tree (frontends/
  // yaml_document.h); the ModelLoader keeps it while it builds the graph.
  try {
    documents_ = std::make_unique<YamlDocuments>(text);
  } catch (const YamlRunaway& r) {
    reader_.diags().error({std::max(r.mark.line, 0) + 1, std::max(r.mark.column, 0) + 1},
                          "invalid YAML: the parser makes no progress here (a malformed flow collection such as "
                          "'[x[x, y]' or an unclosed '{'?)");
    return std::nullopt;
  } catch (const YAML::Exception& e) {
    reader_.diags().error({e.mark.line + 1, e.mark.column + 1}, fmt::format("invalid YAML: {}", e.msg));
    return std::nullopt;
  }
  if (documents_->size() > 1) {
    reader_.diags().error(secondDocumentLoc(text, documents_->root(1)),
                          fmt::format("the file holds {} YAML documents; a model file holds exactly one (remove this "
                                      "'---' and what follows, or put the second model in its own file)",
                                      documents_->size()));
    return std::nullopt;
  }
  if (documents_->size() == 0 || documents_->root(0).IsNull()) {
    reader_.diags().error({1, 1}, fmt::format("the file holds no model (it is empty or only comments); a model is a "
                                              "mapping with keys {}",
                                              joinNames(kTopKeys)));
    return std::nullopt;
  }
  YamlNode root = documents_->root(0);
  if (!root.IsMap()) {
    reader_.diags().error(locOf(root),
                          fmt::format("a model must be a mapping with keys {}; got {}", joinNames(kTopKeys), describeNode(root)));
    return std::nullopt;
  }
  if (reader_.optional(root, "graph")) return loadPlan(root);
  reader_.checkMap(root, "the model", kTopKeys);
  graph_.name = options_.defaultName;
  reserveTables(root);
  if (auto n = reader_.optional(root, "name"))
    if (auto s = reader_.string(*n, "name")) graph_.name = *s;
  if (auto p = reader_.required(root, "parallel", "the model")) readParallel(*p);
  if (auto c = reader_.optional(root, "cluster")) readCluster(*c);
  if (auto i = reader_.optional(root, "inputs")) readTensors(*i, ValueKind::Input);
  if (auto p = reader_.optional(root, "parameters")) readTensors(*p, ValueKind::Parameter);
  auto opsNode = reader_.required(root, "ops", "the model");
  if (opsNode) declareOps(*opsNode);
  if (stop()) return std::nullopt;
  for (OpSource& src : sources_) resolveOperands(src);
  if (stop()) return std::nullopt;
  if (!orderOps()) return std::nullopt;
  inferTypes();
  if (parallelOk_) {
    readTensorShardings();  // inputs and parameters come before ops in a model file
    for (OpSource& src : sources_)
      if (src.typesOk) readAnnotations(src);
    if (auto r = reader_.optional(root, "recompute")) applyPlanRecompute(*r);
    readStages(reader_.optional(root, "stages"));
  }
  readOutputs(reader_.optional(root, "outputs"));
  if (reader_.diags().hasErrors()) return std::nullopt;
  return std::move(graph_);
}

// Sized once from the lengths of the model's lists: growing them rehashes (and moves) every
// entry of tables that reach hundreds of thousands of names. Malformed lists count as empty.
void ModelLoader::reserveTables(const YamlNode& root) {
  size_t tensors = 0, ops = 0;
  for (const char* key : {"inputs", "parameters"})
    if (YamlNode list = root.find(key); list.IsSequence()) tensors += list.size();
  if (YamlNode list = root.find("ops"); list.IsSequence()) ops = list.size();
  nameLocs_.reserve(tensors + ops);
  valuesByName_.reserve(tensors + 2 * ops);  // an op's name and `op:0`
  graph_.ops.reserve(ops);
  graph_.values.reserve(tensors + ops);  // most ops have one result
}

void ModelLoader::readParallel(const YamlNode& node) {
  if (!reader_.checkMap(node, "'parallel'", kParallelKeys)) return;
  graph_.parallel.loc = locOf(node);
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
    if (parallelOk_) graph_.parallel.mesh = named;
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
  ParallelConfig& p = graph_.parallel;
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

// The search mode and the switches.
void ModelLoader::readParallelSettings(const YamlNode& node) {
  ParallelConfig& p = graph_.parallel;
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
  if (auto n = reader_.optional(node, "optimizer"))
    if (auto s = reader_.choice(*n, "optimizer", optimizerNames())) p.optimizer = *parseOptimizer(*s);
  if (auto n = reader_.optional(node, "enable_parallel_optimizer"))
    if (auto b = reader_.boolean(*n, "enable_parallel_optimizer")) p.parallelOptimizerLevel = *b ? 1 : 0;
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
  if (auto n = reader_.optional(node, "micro_batches"))
    if (auto v = reader_.integer(*n, "micro_batches")) {
      if (*v < 1 || *v > kMaxDeviceNum)
        reader_.error(*n, fmt::format("micro_batches must be in 1 .. {}; got {}", kMaxDeviceNum, *v));
      else p.microBatches = *v;
    }
  if (auto n = reader_.optional(node, "precision"))
    if (auto s = reader_.choice(*n, "precision", precisionNames())) p.precision = *parsePrecision(*s);
  if (auto n = reader_.optional(node, "zero_stage"))
    if (auto v = reader_.integer(*n, "zero_stage")) {
      if (*v < 0 || *v > 2)
        reader_.error(*n, fmt::format("zero_stage must be 0, 1 (optimizer states) or 2 (and gradients); got {} (the weights "
                                      "too: enable_parallel_optimizer)",
                                      *v));
      else p.zeroStage = static_cast<int>(*v);
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
void ModelLoader::readCostModel(const YamlNode& node) {
  if (!reader_.checkMap(node, "'cost_model'", kCostModelKeys)) return;
  CostModel& m = graph_.parallel.costModel;
  double* fields[] = {&m.alpha, &m.beta, &m.gamma, &m.peakFlops, &m.memoryBandwidth};
  for (size_t i = 0; i < kCostModelKeys.size(); ++i) {
    const std::string& key = kCostModelKeys[i];
    if (auto n = reader_.optional(node, key))
      if (auto v = reader_.number(*n, "cost_model." + key)) {
        if (!(*v > 0)) reader_.error(*n, fmt::format("cost_model.{} must be > 0; got {}", key, *v));
        else *fields[i] = *v;
      }
  }
}

// The named mesh of layout-style annotations: device_matrix with alias_name. `deviceNumOk`:
// device_num was read (only then can the mesh be checked against it). Returns false when the
// parallel block is unusable: device_num was not, or the mesh is not.
bool ModelLoader::readMesh(const YamlNode& node, bool deviceNumOk) {
  ParallelConfig& p = graph_.parallel;
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

bool ModelLoader::claimName(const std::string& name, const YamlNode& at) {
  auto [it, inserted] = nameLocs_.emplace(name, locOf(at));
  if (inserted) return true;
  reader_.error(at, fmt::format("duplicate name '{}'", name));
  reader_.diags().note(it->second, fmt::format("'{}' is first defined here", name));
  return false;
}

void ModelLoader::readTensors(const YamlNode& list, ValueKind kind) {
  const char* section = kind == ValueKind::Input ? "inputs" : "parameters";
  if (!reader_.sequence(list, section)) return;
  for (const YamlNode& t : list) {
    if (stop()) return;
    if (!reader_.checkMap(t, fmt::format("an entry of '{}'", section), kTensorKeys)) continue;
    auto nameNode = reader_.required(t, "name", fmt::format("an entry of '{}'", section));
    auto shapeNode = reader_.required(t, "shape", fmt::format("an entry of '{}'", section));
    auto dtypeNode = reader_.required(t, "dtype", fmt::format("an entry of '{}'", section));
    std::optional<std::string> name = nameNode ? reader_.string(*nameNode, "name") : std::nullopt;
    if (nameNode && !name && nameNode->IsScalar()) rejectedNames_.insert(nameNode->Scalar());
    std::optional<std::vector<int64_t>> shape = shapeNode ? reader_.intList(*shapeNode, "shape") : std::nullopt;
    if (shape)
      for (size_t i = 0; i < shape->size(); ++i)
        if ((*shape)[i] < 1) {
          reader_.error((*shapeNode)[i], fmt::format("shape entries must be >= 1; got {}", (*shape)[i]));
          shape.reset();
          break;
        }
    if (shape && !withinElementLimit(*shape)) {
      reader_.error(*shapeNode,
                    fmt::format("shape {} has more than {} elements (docs/limits.md)", formatShape(*shape), kMaxTensorElements));
      shape.reset();
    }
    std::optional<DType> dtype;
    if (dtypeNode)
      if (auto s = reader_.choice(*dtypeNode, "dtype", allDTypeModelNames())) dtype = parseDType(*s);
    if (name && (!shape || !dtype)) rejectedNames_.insert(*name);
    if (!name || !shape || !dtype) continue;
    if (!claimName(*name, *nameNode)) continue;
    ValueId id = graph_.addGraphInput(*name, {*dtype, *shape}, kind, locOf(*nameNode));
    valuesByName_[*name] = id;
    if (auto s = reader_.optional(t, "sharding")) tensorShardingNodes_.emplace_back(id, *s);
  }
}

int ModelLoader::resultCount(const OpDef& def, const YamlNode& opNode) {
  std::optional<int64_t> count;
  if (!def.resultCountAttr.empty())
    if (auto attrs = reader_.optional(opNode, "attrs"))
      if (auto n = reader_.optional(*attrs, def.resultCountAttr)) count = scalarAsInt(*n);
  return def.resultCount(count);
}

void ModelLoader::declareOps(const YamlNode& list) {
  if (!reader_.sequence(list, "ops")) return;
  if (list.size() == 0) reader_.error(list, "ops must list at least one op");
  const std::vector<std::string> typeNames = modelOpTypeNames();
  int index = 0;
  for (const YamlNode& node : list) {
    if (stop()) return;
    if (!reader_.checkMap(node, "an op", kOpKeys)) continue;
    auto nameNode = reader_.required(node, "name", "an op");
    auto typeNode = reader_.required(node, "type", "an op");
    reader_.required(node, "inputs", "an op");
    std::optional<std::string> name = nameNode ? reader_.string(*nameNode, "op name") : std::nullopt;
    if (nameNode && !name && nameNode->IsScalar()) rejectedNames_.insert(nameNode->Scalar());
    const OpDef* def = nullptr;
    if (typeNode)
      if (auto type = reader_.string(*typeNode, "op type")) {
        def = findOpDef(*type);
        if (def && def->insertedOnly) {
          reader_.error(*typeNode, fmt::format("op type '{}' is inserted by the passes; a model may not use it", *type));
          def = nullptr;
        } else if (!def) {
          auto match = closestMatch(*type, typeNames);
          reader_.error(*typeNode, match ? fmt::format("unknown op type '{}'; did you mean '{}'?", *type, *match)
                                         : fmt::format("unknown op type '{}'; `irc --list-ops` lists the op set", *type));
        }
      }
    if (name && !def) rejectedNames_.insert(*name);
    if (!name || !def) continue;
    if (!claimName(*name, *nameNode)) continue;
    Op op;
    op.name = *name;
    op.type = def->type;
    op.instanceName = *name;
    if (auto ms = reader_.optional(node, "ms_name"))
      if (auto s = reader_.string(*ms, "ms_name")) op.msName = *s;
    op.loc = locOf(node);
    op.modelIndex = index++;
    OpId id = graph_.addOp(std::move(op), std::vector<TensorType>(resultCount(*def, node)));
    const Op& added = graph_.op(id);
    // `op:r` names result r, unless a value or op is declared with exactly that name: the exact
    // name wins (docs/model-format.md), whichever is declared first.
    valuesByName_[*name] = added.results[0];
    for (size_t r = 0; r < added.results.size(); ++r) {
      std::string indexed = text::concat(*name, ":", r);
      if (!nameLocs_.count(indexed)) valuesByName_[indexed] = added.results[r];
    }
    sources_.push_back({id, node});
  }
}

std::optional<ValueId> ModelLoader::lookupValue(const YamlNode& ref, const Op& user) {
  if (!ref.IsScalar() || ref.Scalar().empty()) {
    reader_.error(ref, fmt::format("the inputs of op '{}' must be value names; got {}", user.name, describeNode(ref)));
    return std::nullopt;
  }
  const std::string& name = ref.Scalar();
  if (auto it = valuesByName_.find(name); it != valuesByName_.end()) return it->second;
  if (auto problem = nameProblem(name)) {
    reader_.error(ref, fmt::format("the input of op '{}' {}", user.name, *problem));
    return std::nullopt;
  }
  if (rejectedNames_.count(name) || rejectedNames_.count(name.substr(0, name.rfind(':')))) return std::nullopt;
  // "op:3" on an op with fewer results deserves its own message.
  if (auto colon = name.rfind(':'); colon != std::string::npos) {
    std::string base = name.substr(0, colon);
    if (auto it = valuesByName_.find(base); it != valuesByName_.end() && graph_.value(it->second).producer != kNoId) {
      const Op& producer = graph_.op(graph_.value(it->second).producer);
      reader_.error(ref, fmt::format("'{}' names output {} of op '{}', which has {} output{} (valid: {}:0 .. {}:{})", name,
                                     name.substr(colon + 1), base, producer.results.size(),
                                     producer.results.size() == 1 ? "" : "s", base, base, producer.results.size() - 1));
      return std::nullopt;
    }
  }
  std::vector<std::string> names;
  for (const auto& [n, _] : valuesByName_)
    if (n != user.name && n.rfind(user.name + ":", 0) != 0) names.push_back(n);  // not the op itself
  std::sort(names.begin(), names.end());
  auto match = closestMatch(name, names);
  reader_.error(ref, fmt::format("unknown value '{}' in the inputs of op '{}'{}", name, user.name,
                                 match ? fmt::format("; did you mean '{}'?", *match) : std::string()));
  return std::nullopt;
}

std::optional<Attribute> ModelLoader::readConstant(const YamlNode& node, const OperandSpec& spec, const Op& op) {
  std::string what = fmt::format("operand '{}' of {} '{}'", spec.name, op.type, op.name);
  switch (spec.kind) {
    case OperandKind::Int:
      if (auto v = reader_.integer(node, what)) return Attribute(*v);
      return std::nullopt;
    case OperandKind::IntOrTuple:
      if (node.IsSequence()) {
        if (auto v = reader_.intList(node, what)) return Attribute(IntTuple(*v));
        return std::nullopt;
      }
      if (auto v = reader_.integer(node, fmt::format("{} (an int or a list of ints)", what))) return Attribute(*v);
      return std::nullopt;
    case OperandKind::Tuple:
      if (auto v = reader_.intList(node, what)) return Attribute(IntTuple(*v));
      return std::nullopt;
    case OperandKind::DTypeConst:
      if (auto s = reader_.choice(node, what, allDTypeModelNames())) return Attribute(*parseDType(*s));
      return std::nullopt;
    case OperandKind::TensorOrScalar:
      if (auto v = scalarAsNumber(node)) return Attribute(ScalarTensor{DType::Float32, *v});
      reader_.error(node, fmt::format("{} must be a value name or a number; got {}", what, describeNode(node)));
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<Attribute> ModelLoader::readAttr(const YamlNode& node, const AttrSpec& spec, const Op& op) {
  std::string what = fmt::format("attribute '{}' of {} '{}'", spec.name, op.type, op.name);
  switch (spec.kind) {
    case AttrKind::Bool:
      if (auto b = reader_.boolean(node, what)) return Attribute(*b);
      return std::nullopt;
    case AttrKind::Int:
      if (auto v = reader_.integer(node, what)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::Float:
      if (auto v = reader_.number(node, what)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::IntOrTuple:
      if (node.IsSequence()) {
        if (auto v = reader_.intList(node, what)) return Attribute(IntTuple(*v));
        return std::nullopt;
      }
      if (auto v = reader_.integer(node, what)) return Attribute(IntTuple{*v});
      return std::nullopt;
    case AttrKind::String:
      if (auto s = reader_.string(node, what)) return Attribute(*s);
      return std::nullopt;
  }
  return std::nullopt;
}

void ModelLoader::resolveOperands(OpSource& src) {
  if (stop()) return;
  Op& op = graph_.op(src.id);
  const OpDef& def = *findOpDef(op.type);
  auto inputsNode = reader_.optional(src.node, "inputs");
  if (!inputsNode || !reader_.sequence(*inputsNode, fmt::format("the inputs of op '{}'", op.name))) return;
  std::optional<YamlNode> attrsNode = reader_.optional(src.node, "attrs");
  if (attrsNode && !attrsNode->IsMap()) {
    reader_.error(*attrsNode, fmt::format("the attrs of op '{}' must be a mapping; got {}", op.name, describeNode(*attrsNode)));
    return;
  }
  const YamlNode& inputs = *inputsNode;
  bool variadic = def.operands.back().kind == OperandKind::TensorList;
  if (!variadic && inputs.size() > def.operands.size()) {
    reader_.error(inputs[def.operands.size()],
                  fmt::format("{} takes {} input{} ({}); op '{}' has {}", def.type, def.operands.size(),
                              def.operands.size() == 1 ? "" : "s", joinNames(operandNamesOf(def)), op.name, inputs.size()));
    return;
  }
  if (variadic && inputs.size() == 0) {
    reader_.error(inputs, fmt::format("{} takes one or more inputs; op '{}' has none", def.type, op.name));
    return;
  }
  bool ok = readOperands(op, def, inputs, attrsNode);
  ok = readOpAttrs(src, op, def, attrsNode) && ok;
  src.operandsOk = ok;
}

std::vector<std::string> ModelLoader::operandNamesOf(const OpDef& def) {
  std::vector<std::string> names;
  for (const auto& o : def.operands) names.push_back(o.name);
  return names;
}

// Each operand from `inputs` in order (a value, or a constant written in place), else from
// `attrs` (a constant operand given by name), else its default.
bool ModelLoader::readOperands(Op& op, const OpDef& def, const YamlNode& inputs, const std::optional<YamlNode>& attrsNode) {
  bool ok = true;
  for (size_t i = 0; i < def.operands.size(); ++i) {
    const OperandSpec& spec = def.operands[i];
    if (spec.kind == OperandKind::TensorList) {
      for (const YamlNode& ref : inputs) {
        auto v = lookupValue(ref, op);
        if (v) op.operands.push_back(Operand::ofValue(*v, locOf(ref)));
        ok = ok && v.has_value();
      }
      continue;
    }
    std::optional<YamlNode> fromAttrs = attrsNode ? reader_.optional(*attrsNode, spec.name) : std::nullopt;
    bool isConstant = spec.kind != OperandKind::Tensor && spec.kind != OperandKind::TensorOrScalar;
    if (i < inputs.size()) {
      const YamlNode& ref = inputs[i];
      if (fromAttrs) {
        reader_.error(*fromAttrs,
                      fmt::format("operand '{}' of op '{}' is given twice: in inputs and in attrs", spec.name, op.name));
        ok = false;
        continue;
      }
      if (spec.kind == OperandKind::Tensor ||
          (spec.kind == OperandKind::TensorOrScalar && ref.IsScalar() && !scalarAsNumber(ref))) {
        auto v = lookupValue(ref, op);
        if (v) op.operands.push_back(Operand::ofValue(*v, locOf(ref)));
        ok = ok && v.has_value();
      } else if (auto c = readConstant(ref, spec, op)) {
        op.operands.push_back(Operand::ofConstant(*c, locOf(ref)));
      } else {
        ok = false;
      }
    } else if (fromAttrs && (isConstant || spec.kind == OperandKind::TensorOrScalar)) {
      if (auto c = readConstant(*fromAttrs, spec, op)) op.operands.push_back(Operand::ofConstant(*c, locOf(*fromAttrs)));
      else ok = false;
    } else if (spec.defaultValue) {
      op.operands.push_back(Operand::ofConstant(*spec.defaultValue, op.loc));
    } else {
      reader_.error(inputs,
                    fmt::format("{} takes {} input{} ({}); op '{}' has {}", def.type, def.operands.size(),
                                def.operands.size() == 1 ? "" : "s", joinNames(operandNamesOf(def)), op.name, inputs.size()));
      return false;
    }
  }
  return ok;
}

// Attributes: every key must be an attribute of the op or one of its constant operands; an
// attribute not given takes its default.
bool ModelLoader::readOpAttrs(const OpSource& src, Op& op, const OpDef& def, const std::optional<YamlNode>& attrsNode) {
  bool ok = true;
  std::vector<std::string> accepted;
  for (const auto& a : def.attrs) accepted.push_back(a.name);
  for (const auto& o : def.operands)
    if (o.kind != OperandKind::Tensor && o.kind != OperandKind::TensorList) accepted.push_back(o.name);
  if (attrsNode)
    for (auto it = attrsNode->begin(); it != attrsNode->end(); ++it) {
      const std::string key = it->first.Scalar();
      op.attrLocs.emplace_back(key, locOf(it->first));
      if (std::find(accepted.begin(), accepted.end(), key) != accepted.end()) continue;
      auto match = closestMatch(key, accepted);
      reader_.error(it->first, fmt::format("{} has no attribute '{}'{}", def.type, key,
                                           match              ? fmt::format("; did you mean '{}'?", *match)
                                           : accepted.empty() ? std::string("; it takes none")
                                                              : fmt::format("; valid: {}", joinNames(accepted))));
      ok = false;
    }
  for (const AttrSpec& spec : def.attrs) {
    auto node = attrsNode ? reader_.optional(*attrsNode, spec.name) : std::nullopt;
    if (node) {
      if (auto a = readAttr(*node, spec, op)) op.attrs[spec.name] = *a;
      else ok = false;
    } else if (spec.defaultValue) {
      op.attrs[spec.name] = *spec.defaultValue;
    } else {
      reader_.error(src.node, fmt::format("{} '{}' needs attribute '{}'", def.type, op.name, spec.name));
      ok = false;
    }
  }
  return ok;
}

bool ModelLoader::orderOps() {
  TopologyResult topo = topologicalOrder(graph_);
  if (!topo.acyclic()) {
    std::vector<std::string> names;
    for (OpId id : topo.cycle) names.push_back(fmt::format("'{}'", graph_.op(id).name));
    const Op& first = graph_.op(topo.cycle.front());
    reader_.diags().error(first.loc, fmt::format("the ops {} form a cycle: each needs another's output", joinNames(names)));
    return false;
  }
  graph_.order = std::move(topo.order);
  return true;
}

void ModelLoader::inferTypes() {
  std::vector<bool> valueOk(graph_.values.size(), false);
  for (ValueId v : graph_.inputs) valueOk[v] = true;
  for (ValueId v : graph_.parameters) valueOk[v] = true;
  std::vector<OpSource*> byId(graph_.ops.size(), nullptr);
  for (OpSource& s : sources_) byId[s.id] = &s;
  for (OpId id : graph_.order) {
    OpSource& src = *byId[id];
    Op& op = graph_.op(id);
    if (!src.operandsOk) continue;
    std::vector<InferOperand> in;
    bool ready = true;
    for (const Operand& o : op.operands) {
      if (o.isValue() && !valueOk[o.value]) ready = false;  // its producer already failed: no cascade
      in.push_back({o.isValue() ? &graph_.value(o.value).type : nullptr, o.isValue() ? nullptr : &*o.constant});
    }
    if (!ready) continue;
    const OpDef& def = defOf(op);
    giveScalarsTensorDtype(graph_, op);
    InferResult r = inferResultTypes(def, in, op.attrs);
    if (auto* e = std::get_if<InferError>(&r)) {
      SourceLoc loc = op.loc;
      if (e->operandIndex >= 0 && static_cast<size_t>(e->operandIndex) < op.operands.size() &&
          op.operands[e->operandIndex].loc.valid())
        loc = op.operands[e->operandIndex].loc;
      else if (!e->attr.empty()) loc = op.attrLoc(e->attr);
      reader_.diags().error(loc, fmt::format("{} '{}': {}", op.type, op.name, e->message));
      continue;
    }
    auto types = std::get<std::vector<TensorType>>(std::move(r));
    for (size_t i = 0; i < types.size() && i < op.results.size(); ++i) {
      graph_.value(op.results[i]).type = types[i];
      valueOk[op.results[i]] = true;
    }
    src.typesOk = true;
  }
}

namespace {

// An op's `sharding:` constraints on its outputs: one sharding, or a list with one entry (or
// null) per output of a multi-output op.
std::vector<std::optional<TensorSharding>> readOutputShardings(YamlReader& reader, const YamlNode& n, const std::string& opName,
                                                               const std::vector<AnnotatedTensor>& outputs,
                                                               const ParallelConfig& parallel) {
  std::vector<std::optional<TensorSharding>> shardings(outputs.size(), std::nullopt);
  if (outputs.size() == 1 && !n.IsSequence()) {
    shardings[0] = readTensorSharding(reader, n, outputs[0], parallel, true);
  } else if (reader.sequence(n, fmt::format("the sharding of multi-output op '{}' (one entry per output)", opName))) {
    if (n.size() != outputs.size()) {
      reader.error(
          n, fmt::format("the sharding of op '{}' has {} entries; the op has {} outputs", opName, n.size(), outputs.size()));
    } else {
      for (size_t i = 0; i < outputs.size(); ++i)
        if (!n[i].IsNull()) shardings[i] = readTensorSharding(reader, n[i], outputs[i], parallel, true);
    }
  }
  return shardings;
}

}  // namespace

void ModelLoader::readAnnotations(OpSource& src) {
  Op& op = graph_.op(src.id);
  const YamlNode& node = src.node;
  // Most ops configure nothing: they get no annotation (and no copies of their operand names).
  static constexpr std::string_view kAnnotationKeys[] = {"in_strategy", "in_layout", "out_strategy", "out_layout",
                                                         "priority",    "sharding",  "recompute"};
  if (std::none_of(std::begin(kAnnotationKeys), std::end(kAnnotationKeys),
                   [&](std::string_view key) { return node.find(key).IsDefined(); }))
    return;
  std::vector<AnnotatedTensor> inputs, outputs;
  for (const Operand& o : op.operands)
    if (o.isValue()) inputs.push_back({graph_.value(o.value).name, graph_.value(o.value).type.shape});
  for (ValueId r : op.results) outputs.push_back({graph_.value(r).name, graph_.value(r).type.shape});
  OpAnnotation& ann = *op.annotation;
  int64_t deviceNum = graph_.parallel.deviceNum;
  if (auto n = reader_.optional(node, "recompute"))
    if (auto b = reader_.boolean(*n, "recompute")) ann.recompute = *b;
  auto inStrategy = reader_.optional(node, "in_strategy");
  auto inLayout = reader_.optional(node, "in_layout");
  if (inStrategy && inLayout) {
    reader_.error(*inLayout, fmt::format("op '{}' has both in_strategy and in_layout; give one", op.name));
    return;
  }
  StrategyForm form = strategyFormOf(defOf(op));
  if ((inStrategy || inLayout) && form == StrategyForm::FromNeighbours) {
    reader_.error(inStrategy ? *inStrategy : *inLayout,
                  fmt::format("Reshape '{}' takes no strategy: its layouts come from its producer and consumer", op.name));
    return;
  }
  if (inStrategy) {
    ann.inStrategyLoc = locOf(*inStrategy);
    std::vector<AnnotatedTensor> described = inputs;
    if (form == StrategyForm::OnOutput) {
      // MindSpore writes such a strategy on the output, then () for each scalar operand.
      described = {{fmt::format("the output of '{}'", op.name), graph_.value(op.results[0]).type.shape}};
      size_t given = inStrategy->IsSequence() ? inStrategy->size() : 1;
      for (size_t i = 1; i < std::min<size_t>(given, 4); ++i) described.push_back({"a scalar operand", {}});
    }
    ann.inStrategy = readStrategy(reader_, *inStrategy, fmt::format("in_strategy of op '{}'", op.name), described, deviceNum);
    // It always reads ((out), (), ()), however many () the model wrote, so that
    // primitive_attrs and the type line print the same tuple.
    if (form == StrategyForm::OnOutput && ann.inStrategy) ann.inStrategy->resize(3);
  }
  if (auto n = reader_.optional(node, "out_strategy")) {
    ann.outStrategyLoc = locOf(*n);
    if (!inStrategy) reader_.error(*n, fmt::format("out_strategy of op '{}' needs an in_strategy beside it", op.name));
    else ann.outStrategy = readStrategy(reader_, *n, fmt::format("out_strategy of op '{}'", op.name), outputs, deviceNum);
  }
  if (inLayout) {
    ann.inLayoutLoc = locOf(*inLayout);
    ann.inLayout =
        readLayouts(reader_, *inLayout, fmt::format("in_layout of op '{}'", op.name), inputs, graph_.parallel, ann.inLayoutLoc);
  }
  if (auto n = reader_.optional(node, "out_layout")) {
    ann.outLayoutLoc = locOf(*n);
    ann.outLayout =
        readLayouts(reader_, *n, fmt::format("out_layout of op '{}'", op.name), outputs, graph_.parallel, ann.outLayoutLoc);
  }
  if (auto n = reader_.optional(node, "priority")) {
    ann.priorityLoc = locOf(*n);
    if (auto v = reader_.integer(*n, "priority")) {
      if (*v < 0) reader_.error(*n, fmt::format("priority must be >= 0 (0 is highest); got {}", *v));
      else ann.priority = *v;
    }
  }
  if (auto n = reader_.optional(node, "sharding"))
    ann.outputSharding = readOutputShardings(reader_, *n, op.name, outputs, graph_.parallel);
}

void ModelLoader::readTensorShardings() {
  for (auto& [id, node] : tensorShardingNodes_) {
    Value& v = graph_.value(id);
    v.sharding = readTensorSharding(reader_, node, {v.name, v.type.shape}, graph_.parallel);
  }
}

void ModelLoader::readOutputs(const std::optional<YamlNode>& node) {
  if (node) {
    if (!reader_.sequence(*node, "outputs")) return;
    if (node->size() == 0) reader_.error(*node, "outputs must name at least one value");
    for (const YamlNode& ref : *node) {
      if (!ref.IsScalar()) {
        reader_.error(ref, fmt::format("outputs must be value names; got {}", describeNode(ref)));
        continue;
      }
      auto it = valuesByName_.find(ref.Scalar());
      if (it == valuesByName_.end() && rejectedNames_.count(ref.Scalar())) continue;
      if (it == valuesByName_.end()) {
        std::vector<std::string> names;
        for (const auto& [n, _] : valuesByName_) names.push_back(n);
        std::sort(names.begin(), names.end());
        reader_.error(ref, fmt::format("unknown value '{}' in outputs{}", ref.Scalar(), didYouMean(ref.Scalar(), names)));
        continue;
      }
      graph_.outputs.push_back(it->second);
    }
    return;
  }
  // Default: every op result that nothing consumes, in print order.
  std::vector<bool> used(graph_.values.size(), false);
  for (const Op& op : graph_.ops)
    for (const Operand& o : op.operands)
      if (o.isValue()) used[o.value] = true;
  for (OpId id : graph_.order)
    for (ValueId r : graph_.op(id).results)
      if (!used[r]) graph_.outputs.push_back(r);
}

}  // namespace irc::model_loading

namespace irc {

std::optional<Graph> loadModel(const std::string& text, DiagnosticEngine& diags, const FrontendOptions& options) {
  try {
    model_loading::ModelLoader loader(diags, options);
    return loader.load(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp may throw on access patterns we did not foresee; it is still the model's fault.
    diags.error({e.mark.line + 1, e.mark.column + 1}, fmt::format("invalid YAML: {}", e.msg));
    return std::nullopt;
  }
}

}  // namespace irc
