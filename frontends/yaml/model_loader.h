#pragma once
// The YAML model loader's state (private to frontends/): yaml_frontend.cc reads a model file,
// model_plan.cc a plan over an ONNX graph (`graph: FILE.onnx`), with the same readers for the
// parts they share (parallel, strategies, shardings).
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "frontends/yaml/yaml_document.h"
#include "frontends/yaml/yaml_frontend.h"
#include "frontends/yaml/yaml_reader.h"
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

class ModelLoader {
 public:
  ModelLoader(DiagnosticEngine& diags, const FrontendOptions& options) : reader_(diags), options_(options) {}

  std::optional<Graph> load(const std::string& text);

 private:
  // A plan (docs/onnx.md): the graph from an ONNX file, strategies by node-name glob.
  std::optional<Graph> loadPlan(const YamlNode& root);
  bool readPlanDims(const YamlNode& node, std::map<std::string, int64_t>& dims);
  void applyPlanStrategies(const YamlNode& node, std::vector<std::string>& claimedBy);
  void applyPlanShardings(const YamlNode& node);
  void applyPlanRecompute(const YamlNode& node);
  static std::string matchedModuleInstance(const std::string& glob, const std::string& path);
  // Per op: whether a glob names it, by its name or (a plan's node) its torch module or one
  // enclosing it.
  std::vector<bool> opsMatching(const std::string& glob) const;
  // `stages:` op-name or module-path globs to pipeline stages, or `auto` (frontends/yaml/pipeline_stages.cc).
  void readStages(const std::optional<YamlNode>& node);
  // `modules:`: DTensor's parallel styles on torch module paths (frontends/yaml/plan_modules.cc).
  void applyPlanModules(const YamlNode& node, std::vector<std::string>& claimedBy);
  void applyStyle(const YamlNode& keyNode, const std::string& key, const StyleSpec& spec, const std::vector<OpId>& ops,
                  const std::vector<std::vector<Use>>& uses, std::vector<std::string>& claimedBy);
  bool stop() const { return reader_.diags().capReached(); }
  void reserveTables(const YamlNode& root);
  void readParallel(const YamlNode& node);
  bool readDeviceCount(const YamlNode& node, const std::optional<DeviceMatrix>& mesh);
  std::optional<DeviceMatrix> readNamedMesh(const YamlNode& node);
  void readParallelSettings(const YamlNode& node);
  void readCostModel(const YamlNode& node);
  void readCluster(const YamlNode& node);  // frontends/yaml/cluster_reader.cc
  bool readMesh(const YamlNode& node, bool deviceNumOk);
  void readTensors(const YamlNode& list, ValueKind kind);
  void declareOps(const YamlNode& list);
  void resolveOperands(OpSource& src);
  bool readOperands(Op& op, const OpDef& def, const YamlNode& inputs, const std::optional<YamlNode>& attrsNode);
  bool readOpAttrs(const OpSource& src, Op& op, const OpDef& def, const std::optional<YamlNode>& attrsNode);
  static std::vector<std::string> operandNamesOf(const OpDef& def);
  bool orderOps();
  void inferTypes();
  void readAnnotations(OpSource& src);
  void readTensorShardings();
  void readOutputs(const std::optional<YamlNode>& node);

  bool claimName(const std::string& name, const YamlNode& at);
  std::optional<ValueId> lookupValue(const YamlNode& ref, const Op& user);
  std::optional<Attribute> readConstant(const YamlNode& node, const OperandSpec& spec, const Op& op);
  std::optional<Attribute> readAttr(const YamlNode& node, const AttrSpec& spec, const Op& op);
  int resultCount(const OpDef& def, const YamlNode& opNode);

  YamlReader reader_;
  FrontendOptions options_;
  std::unique_ptr<YamlDocuments> documents_;  // the file's nodes, which the sources below refer to
  Graph graph_;
  // Hashed: every operand reference of every op looks a name up. Where the names are listed (the
  // "did you mean" of an unknown reference) they are sorted first, as a map would list them.
  std::unordered_map<std::string, ValueId> valuesByName_;
  std::unordered_map<std::string, SourceLoc> nameLocs_;
  // Names whose entry was rejected: a reference to one is not reported again (no cascades).
  std::set<std::string> rejectedNames_;
  std::vector<OpSource> sources_;
  std::vector<std::pair<ValueId, YamlNode>> tensorShardingNodes_;
  bool parallelOk_ = false;
};

}  // namespace irc::model_loading
