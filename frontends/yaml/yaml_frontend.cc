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
#include "frontends/document/yaml_reader.h"
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
const std::vector<std::string> kTensorKeys = {"name", "shape", "dtype", "sharding"};
const std::vector<std::string> kOpKeys = {"name",         "type",      "inputs",     "attrs",    "in_strategy",
                                          "out_strategy", "in_layout", "out_layout", "priority", "sharding",
                                          "ms_name",      "recompute", "module"};

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

// The model file's one YAML document, whose root is a mapping; nullptr when it is not (reported).
std::unique_ptr<YamlDocuments> parseModelDocument(const std::string& text, DiagnosticEngine& diags) {
  // YAML text never holds C0 control bytes but TAB, LF and CR (the spec's c-printable), and
  // yaml-cpp loops forever on a NUL: refuse them before parsing.
  int line = 1, col = 1;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t' && c != '\n' && c != '\r') || u == 0x7F) {
      diags.error({line, col}, fmt::format("the file contains the control byte 0x{:02X}; a model is YAML text "
                                           "(only tab, line feed and carriage return among control characters)",
                                           u));
      return nullptr;
    }
    if (c == '\n') ++line, col = 1;
    else ++col;
  }
  // One parse through yaml-cpp's event parser into our own compact tree (frontends/
  // yaml_document.h), kept while a reader builds the graph.
  std::unique_ptr<YamlDocuments> documents;
  try {
    documents = std::make_unique<YamlDocuments>(text);
  } catch (const YamlRunaway& r) {
    diags.error({std::max(r.mark.line, 0) + 1, std::max(r.mark.column, 0) + 1},
                "invalid YAML: the parser makes no progress here (a malformed flow collection such as "
                "'[x[x, y]' or an unclosed '{'?)");
    return nullptr;
  } catch (const YAML::Exception& e) {
    diags.error({e.mark.line + 1, e.mark.column + 1}, fmt::format("invalid YAML: {}", e.msg));
    return nullptr;
  }
  if (auto dup = documents->firstDuplicateKey()) {
    diags.error({dup->again.line + 1, dup->again.column + 1},
                fmt::format("key '{}' appears twice in this mapping (first at line {}); YAML allows each key once, and "
                            "irc would take one of the two silently",
                            dup->key, dup->first.line + 1));
    return nullptr;
  }
  if (documents->size() > 1) {
    diags.error(secondDocumentLoc(text, documents->root(1)),
                fmt::format("the file holds {} YAML documents; a model file holds exactly one (remove this "
                            "'---' and what follows, or put the second model in its own file)",
                            documents->size()));
    return nullptr;
  }
  if (documents->size() == 0 || documents->root(0).IsNull()) {
    diags.error({1, 1}, fmt::format("the file holds no model (it is empty or only comments); a model is a "
                                    "mapping with keys {}",
                                    joinNames(kTopKeys)));
    return nullptr;
  }
  YamlNode root = documents->root(0);
  if (!root.IsMap()) {
    diags.error(locOf(root),
                fmt::format("a model must be a mapping with keys {}; got {}", joinNames(kTopKeys), describeNode(root)));
    return nullptr;
  }
  return documents;
}

std::optional<LoadedGraph> ModelReader::read(const YamlNode& root) {
  reader_.checkMap(root, "the model", kTopKeys);
  graph_.name = options_.defaultName;
  reserveTables(root);
  if (auto n = reader_.optional(root, "name"))
    if (auto s = reader_.string(*n, "name")) graph_.name = *s;
  if (auto p = reader_.required(root, "parallel", "the model")) blocks_.readParallel(*p);
  if (parallel_.degreesAt.any())
    reader_.diags().error(parallel_.loc,
                          "data_parallel, model_parallel, expert_parallel, expert_tensor_parallel, "
                          "context_parallel and sequence_parallel are a config.json plan's degrees (graph: config.json); a model "
                          "file gives strategies");
  if (auto c = reader_.optional(root, "cluster")) blocks_.readCluster(*c);
  if (auto i = reader_.optional(root, "inputs")) readTensors(*i, ValueKind::Input);
  if (auto p = reader_.optional(root, "parameters")) readTensors(*p, ValueKind::Parameter);
  auto opsNode = reader_.required(root, "ops", "the model");
  if (opsNode) declareOps(*opsNode);
  if (blocks_.stop()) return std::nullopt;
  for (OpSource& src : sources_) resolveOperands(src);
  if (blocks_.stop()) return std::nullopt;
  if (!orderOps()) return std::nullopt;
  inferTypes();
  if (blocks_.parallelOk_) {
    readTensorShardings();  // inputs and parameters come before ops in a model file
    for (OpSource& src : sources_)
      if (src.typesOk) blocks_.readAnnotations(src);
    if (auto r = reader_.optional(root, "recompute")) blocks_.applyPlanRecompute(*r);
    blocks_.readStages(reader_.optional(root, "stages"));
  }
  readOutputs(reader_.optional(root, "outputs"));
  return blocks_.finish();
}

// Sized once from the lengths of the model's lists: growing them rehashes (and moves) every
// entry of tables that reach hundreds of thousands of names. Malformed lists count as empty.
void ModelReader::reserveTables(const YamlNode& root) {
  size_t tensors = 0, ops = 0;
  for (const char* key : {"inputs", "parameters"})
    if (YamlNode list = root.find(key); list.IsSequence()) tensors += list.size();
  if (YamlNode list = root.find("ops"); list.IsSequence()) ops = list.size();
  nameLocs_.reserve(tensors + ops);
  valuesByName_.reserve(tensors + 2 * ops);  // an op's name and `op:0`
  graph_.ops.reserve(ops);
  graph_.values.reserve(tensors + ops);  // most ops have one result
}

bool ModelReader::claimName(const std::string& name, const YamlNode& at) {
  auto [it, inserted] = nameLocs_.emplace(name, locOf(at));
  if (inserted) return true;
  reader_.error(at, fmt::format("duplicate name '{}'", name));
  reader_.diags().note(it->second, fmt::format("'{}' is first defined here", name));
  return false;
}

void ModelReader::readTensors(const YamlNode& list, ValueKind kind) {
  const char* section = kind == ValueKind::Input ? "inputs" : "parameters";
  if (!reader_.sequence(list, section)) return;
  for (const YamlNode& t : list) {
    if (blocks_.stop()) return;
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

int ModelReader::resultCount(const OpDef& def, const YamlNode& opNode) {
  std::optional<int64_t> count;
  if (!def.resultCountAttr.empty())
    if (auto attrs = reader_.optional(opNode, "attrs"))
      if (auto n = reader_.optional(*attrs, def.resultCountAttr)) count = scalarAsInt(*n);
  return def.resultCount(count);
}

void ModelReader::declareOps(const YamlNode& list) {
  if (!reader_.sequence(list, "ops")) return;
  if (list.size() == 0) reader_.error(list, "ops must list at least one op");
  const std::vector<std::string> typeNames = modelOpTypeNames();
  int index = 0;
  for (const YamlNode& node : list) {
    if (blocks_.stop()) return;
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
    // The torch module the op belongs to (a model written from a config.json or an export):
    // `modules:`, `recompute:` and `stages:` globs find it by that path.
    if (auto m = reader_.optional(node, "module"))
      if (auto s = reader_.string(*m, "module")) {
        auto [it, added] = moduleIndex_.emplace(*s, static_cast<int>(graph_.modulePaths.size()));
        if (added) graph_.modulePaths.push_back(*s);
        op.modulePath = it->second;
      }
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

std::optional<ValueId> ModelReader::lookupValue(const YamlNode& ref, const Op& user) {
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

std::optional<Attribute> ModelReader::readConstant(const YamlNode& node, const OperandSpec& spec, const Op& op) {
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

std::optional<Attribute> ModelReader::readAttr(const YamlNode& node, const AttrSpec& spec, const Op& op) {
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

void ModelReader::resolveOperands(OpSource& src) {
  if (blocks_.stop()) return;
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

std::vector<std::string> ModelReader::operandNamesOf(const OpDef& def) {
  std::vector<std::string> names;
  for (const auto& o : def.operands) names.push_back(o.name);
  return names;
}

// Each operand from `inputs` in order (a value, or a constant written in place), else from
// `attrs` (a constant operand given by name), else its default.
bool ModelReader::readOperands(Op& op, const OpDef& def, const YamlNode& inputs, const std::optional<YamlNode>& attrsNode) {
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
bool ModelReader::readOpAttrs(const OpSource& src, Op& op, const OpDef& def, const std::optional<YamlNode>& attrsNode) {
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

bool ModelReader::orderOps() {
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

void ModelReader::inferTypes() {
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

void ModelReader::readTensorShardings() {
  for (auto& [id, node] : tensorShardingNodes_) {
    Value& v = graph_.value(id);
    v.sharding = readTensorSharding(reader_, node, {v.name, v.type.shape}, parallel_);
  }
}

void ModelReader::readOutputs(const std::optional<YamlNode>& node) {
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

std::optional<LoadedGraph> loadModel(const std::string& text, DiagnosticEngine& diags, const FrontendOptions& options) {
  try {
    std::unique_ptr<YamlDocuments> documents = model_loading::parseModelDocument(text, diags);
    if (!documents) return std::nullopt;
    YamlNode root = documents->root(0);
    if (root.find("graph").IsDefined()) return model_loading::PlanReader(diags, options).read(root);
    return model_loading::ModelReader(diags, options).read(root);
  } catch (const YAML::Exception& e) {
    // yaml-cpp may throw on access patterns we did not foresee; it is still the model's fault.
    diags.error({e.mark.line + 1, e.mark.column + 1}, fmt::format("invalid YAML: {}", e.msg));
    return std::nullopt;
  }
}

}  // namespace irc
