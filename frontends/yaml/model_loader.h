#pragma once
// The YAML readers (private to frontends/): ModelReader reads a model file, PlanReader a plan
// over an ONNX graph or a config.json (`graph: FILE`); each holds the block readers they share
// (parallel, cluster, strategies, recompute, stages: ModelLoader) and the state those read into.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontends/hf_config/decoder_model.h"
#include "frontends/document/yaml_document.h"
#include "frontends/yaml/yaml_frontend.h"
#include "frontends/document/yaml_reader.h"
#include "ir/graph.h"
#include "ops/op_defs.h"

namespace irc::model_loading {

extern const std::vector<std::string> kTopKeys, kParallelKeys, kTensorKeys, kOpKeys;

// Per model op, the YAML it came from, for the passes of the loader that run after the op exists.
struct OpSource {
  OpId id = kNoId;
  YamlNode node;
  bool operandsOk = false;
  bool typesOk = false;
};

struct StyleSpec;  // frontends/yaml/plan_modules.cc

// Does a plan key (modules:, recompute:) name the module at `path`: whole, or relative to any
// module above it; `*` crosses dots (frontends/yaml/plan_modules.cc).
bool modulePathMatches(const std::string& key, const std::string& path);
// The few names closest to a key that matched nothing (a glob's `*` and `?` do not count).
std::string closestNames(const std::string& key, const std::vector<std::string>& names);

// What model files and plans share: the parsed document, the `parallel` and `cluster` blocks
// (frontends/yaml/parallel_block.cc, cluster_reader.cc), an op's strategies and shardings,
// `recompute:` and `stages:` by op or module glob. The graph and the settings read are two
// results: finish() hands both over. Each reader holds one (no reader inherits it).
class ModelLoader {
 public:
  ModelLoader(DiagnosticEngine& diags, const FrontendOptions& options) : reader_(diags), options_(options) {}

  // The graph and settings read, or nullopt when anything was reported.
  std::optional<LoadedGraph> finish();
  bool stop() const { return reader_.diags().capReached(); }

  void readParallel(const YamlNode& node);
  bool readDeviceCount(const YamlNode& node, const std::optional<DeviceMatrix>& mesh);
  std::optional<DeviceMatrix> readNamedMesh(const YamlNode& node);
  void readParallelSettings(const YamlNode& node);
  void readOptimizerSettings(const YamlNode& node);
  void readPipelineSettings(const YamlNode& node);
  void readDegrees(const YamlNode& node);
  void readCostModel(const YamlNode& node);
  void readPipelineSchedule(const YamlNode& node, ParallelSettings& p);
  void readRecomputeLayers(const YamlNode& node, ParallelSettings& p);
  void readCluster(const YamlNode& node);  // frontends/yaml/cluster_reader.cc
  bool readMesh(const YamlNode& node, bool deviceNumOk);

  // An op's in_strategy, out_strategy, in_layout, out_layout, priority and output sharding.
  void readAnnotations(OpSource& src);
  void applyPlanRecompute(const YamlNode& node);
  static std::string matchedModuleInstance(const std::string& glob, const std::string& path);
  // Per op: whether a glob names it, by its name or (a plan's node) its torch module or one
  // enclosing it.
  std::vector<bool> opsMatching(const std::string& glob) const;
  // `stages:` op-name or module-path globs to pipeline stages, or `auto` (frontends/yaml/pipeline_stages.cc).
  void readStages(const std::optional<YamlNode>& node);
  void readAutoStages();                                                  // stages: auto
  std::vector<int32_t> readNamedStages(const YamlNode& node);             // each op's named stage, -1 for none
  void placeStages(const YamlNode& node, std::vector<int32_t>& stageOf);  // the others, and the checks

  YamlReader reader_;
  FrontendOptions options_;
  Graph graph_;
  ParallelConfig parallel_;                       // the `parallel` block (and `cluster`) as read
  std::map<ValueId, TensorValue> parameterData_;  // a plan's ONNX file's, when kept
  ModelFacts facts_;                              // a plan's config.json's
  bool parallelOk_ = false;
};

// A model file (spec/model-format.md): inputs, parameters and ops in YAML (yaml_frontend.cc).
class ModelReader {
 public:
  ModelReader(DiagnosticEngine& diags, const FrontendOptions& options) : blocks_(diags, options) {}
  std::optional<LoadedGraph> read(const YamlNode& root);

 private:
  ModelLoader blocks_;  // the shared block readers and what they read into
  // Its state by the names the reader's methods use.
  YamlReader& reader_ = blocks_.reader_;
  const FrontendOptions& options_ = blocks_.options_;
  Graph& graph_ = blocks_.graph_;
  ParallelConfig& parallel_ = blocks_.parallel_;

  void reserveTables(const YamlNode& root);
  void readTensors(const YamlNode& list, ValueKind kind);
  void declareOps(const YamlNode& list);
  void resolveOperands(OpSource& src);
  bool readOperands(Op& op, const OpDef& def, const YamlNode& inputs, const std::optional<YamlNode>& attrsNode);
  bool readOpAttrs(const OpSource& src, Op& op, const OpDef& def, const std::optional<YamlNode>& attrsNode);
  static std::vector<std::string> operandNamesOf(const OpDef& def);
  bool orderOps();
  void inferTypes();
  void readTensorShardings();
  void readOutputs(const std::optional<YamlNode>& node);

  bool claimName(const std::string& name, const YamlNode& at);
  std::optional<ValueId> lookupValue(const YamlNode& ref, const Op& user);
  std::optional<Attribute> readConstant(const YamlNode& node, const OperandSpec& spec, const Op& op);
  std::optional<Attribute> readAttr(const YamlNode& node, const AttrSpec& spec, const Op& op);
  int resultCount(const OpDef& def, const YamlNode& opNode);

  // Hashed: every operand reference of every op looks a name up. Where the names are listed (the
  // "did you mean" of an unknown reference) they are sorted first, as a map would list them.
  std::unordered_map<std::string, ValueId> valuesByName_;
  std::unordered_map<std::string, SourceLoc> nameLocs_;
  // Names whose entry was rejected: a reference to one is not reported again (no cascades).
  std::set<std::string> rejectedNames_;
  std::vector<OpSource> sources_;
  std::vector<std::pair<ValueId, YamlNode>> tensorShardingNodes_;
  std::unordered_map<std::string, int> moduleIndex_;  // a module path's index in Graph::modulePaths
};

// A plan (docs/onnx.md): the graph from an ONNX file, strategies by node-name glob, DTensor's
// styles on module paths (model_plan.cc, plan_modules.cc).
class PlanReader {
 public:
  PlanReader(DiagnosticEngine& diags, const FrontendOptions& options) : blocks_(diags, options) {}
  std::optional<LoadedGraph> read(const YamlNode& root);

 private:
  ModelLoader blocks_;  // the shared block readers and what they read into
  // Its state by the names the reader's methods use.
  YamlReader& reader_ = blocks_.reader_;
  const FrontendOptions& options_ = blocks_.options_;
  Graph& graph_ = blocks_.graph_;
  ParallelConfig& parallel_ = blocks_.parallel_;
  ModelFacts& facts_ = blocks_.facts_;

  bool readPlanDims(const YamlNode& node, std::map<std::string, int64_t>& dims);
  // The plan's graph from its file into graph_; false after reporting at the `graph:` line.
  bool loadOnnxGraph(const YamlNode& graphNode, const std::string& file, const std::string& path, const std::string& bytes,
                     const std::map<std::string, int64_t>& dims);
  // frontends/yaml/config_plan.cc: a config.json's decoder, with the strategies and stages its
  // parallel degrees stand for (sets degreeStages_ where it assigned the stages).
  bool loadConfigGraph(const YamlNode& graphNode, const std::string& file, const std::string& bytes,
                       const std::map<std::string, int64_t>& dims, const std::optional<YamlNode>& moe);
  // `moe: {capacity_factor: F}` or `moe: {imbalance: F}` into the shape's capacity factor.
  void readMoe(const YamlNode& node, bool hasExperts, DecoderShape& shape);
  bool degreeStages_ = false;
  void applyPlanStrategies(const YamlNode& node, std::vector<std::string>& claimedBy);
  void applyPlanShardings(const YamlNode& node);
  // `modules:`: DTensor's parallel styles on torch module paths (frontends/yaml/plan_modules.cc).
  void applyPlanModules(const YamlNode& node, std::vector<std::string>& claimedBy);
  void applyStyle(const YamlNode& keyNode, const std::string& key, const StyleSpec& spec, const std::vector<OpId>& ops,
                  const std::vector<std::vector<Use>>& uses, std::vector<std::string>& claimedBy);
};

}  // namespace irc::model_loading
