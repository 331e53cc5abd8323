#include "frontends/mindspore/mindspore_import.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "frontends/mindspore/dump_values.h"
#include "frontends/mindspore/parallel_facts.h"
#include "ir/limits.h"
#include "ir/names.h"
#include "ir/suggest.h"
#include "ops/op_defs.h"
#include "ops/op_rule.h"
#include "ops/op_sharding.h"
#include "ops/shape_inference.h"
#include "ir/trim.h"

namespace irc {
namespace {

std::optional<Attribute> constantOf(const std::string& text, OperandKind kind) {
  switch (kind) {
    case OperandKind::Int:
      if (auto v = dumpInt(text)) return Attribute(*v);
      return std::nullopt;
    case OperandKind::IntOrTuple:
      if (auto v = dumpInt(text)) return Attribute(*v);
      [[fallthrough]];
    case OperandKind::Tuple:
      if (auto v = dumpIntTuple(text)) return Attribute(*v);
      return std::nullopt;
    case OperandKind::DTypeConst:
      if (auto v = dumpDType(text)) return Attribute(*v);
      return std::nullopt;
    case OperandKind::TensorOrScalar:
      if (auto v = dumpScalarTensor(text)) return Attribute(*v);
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::string_view expected(OperandKind kind) {
  switch (kind) {
    case OperandKind::Int: return "an int";
    case OperandKind::IntOrTuple: return "an int or a tuple of ints";
    case OperandKind::Tuple: return "a tuple of ints";
    case OperandKind::DTypeConst: return "a dtype (Float32, F32, ...)";
    case OperandKind::TensorOrScalar: return "a value or a scalar Tensor(shape=[], dtype=..., value=...)";
    default: return "a value (%N)";
  }
}

std::string_view expected(AttrKind kind) {
  switch (kind) {
    case AttrKind::Bool: return "true or false";
    case AttrKind::Int: return "an int";
    case AttrKind::Float: return "a number";
    case AttrKind::IntOrTuple: return "an int or a tuple of ints";
    case AttrKind::String: return "a string";
  }
  return "";
}

std::optional<Attribute> attrOf(const std::string& text, AttrKind kind) {
  switch (kind) {
    case AttrKind::Bool:
      if (auto v = dumpBool(text)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::Int:
      if (auto v = dumpInt(text)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::Float:
      if (auto v = dumpNumber(text)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::IntOrTuple:
      if (auto v = dumpInt(text)) return Attribute(*v);
      if (auto v = dumpIntTuple(text)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::String: {
      std::string_view s = trimmed(text);
      if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
      return Attribute(std::string(s));
    }
  }
  return std::nullopt;
}

bool isReference(const std::string& arg) { return !arg.empty() && (arg[0] == '%' || arg[0] == '$'); }

// Reads a dump's nodes into a graph, one node at a time.
class DumpImporter {
 public:
  DumpImporter(Graph& graph, DiagnosticEngine& diags) : graph_(graph), diags_(diags), typeNames_(modelOpTypeNames()) {}

  bool importParams(const DumpText& d) {
    // An excerpt's parameters are declared where a node first reads them: their names are
    // reserved first, so that no op takes one (a parameter keeps its name, the op gets another).
    for (const DumpNode& n : d.nodes)
      for (const std::string& arg : n.operands)
        if (auto name = dumpParamName(arg)) names_.insert(*name);
    for (const DumpParam& p : d.params) {
      auto v = declare(p.hasDefault ? ValueKind::Parameter : ValueKind::Input, p.name, p.type, p.line);
      if (!v) return false;
      valueOf_["%para" + std::to_string(&p - d.params.data() + 1) + "_" + p.name] = *v;
    }
    return true;
  }

  void importNode(const DumpNode& n) {
    const std::vector<std::string>& args = n.operands;
    // MindSpore's structural nodes name values, tuples and the outputs; they are no ops.
    if (n.type == "Load" || n.type == "Depend") {  // the value it reads, under another %N
      if (!args.empty())
        if (auto v = resolve(n, args, 0)) valueOf_[n.ref] = *v;
      return;
    }
    if (n.type == "UpdateState") return;
    if (n.type == "MakeTuple" || n.type == "make_tuple") {  // a Concat's operand list, or the Return's
      for (size_t i = 0; i < args.size(); ++i)
        if (auto v = resolve(n, args, i)) tuples_[n.ref].push_back(*v);
      return;
    }
    if (n.type == "TupleGetItem" || n.type == "tuple_getitem") {
      if (args.size() == 2) getItem(n, args);
      return;
    }
    if (n.type == "Return") {
      for (size_t i = 0; i < args.size(); ++i) {
        if (tuples_.contains(args[i]))
          graph_.outputs.insert(graph_.outputs.end(), tuples_.at(args[i]).begin(), tuples_.at(args[i]).end());
        else if (auto v = resolve(n, args, i)) graph_.outputs.push_back(*v);
      }
      return;
    }
    importOp(n, args);
  }

 private:
  // Names go into the model's YAML and every dump and report: valid UTF-8 without control
  // characters (ir/names.h).
  bool nameOk(const std::string& name, SourceLoc loc) {
    if (auto problem = nameProblem(name)) {
      diags_.error(loc, fmt::format("the name {}", *problem));
      return false;
    }
    return true;
  }

  std::optional<ValueId> declare(ValueKind kind, const std::string& name, const std::string& type, int line) {
    if (declared_.contains(name)) return declared_.at(name);
    if (!nameOk(name, {line, 1})) return std::nullopt;
    auto t = dumpTensorType(type);
    if (!t) {
      diags_.error({line, 1}, fmt::format("the type of '{}' is not a tensor type irc knows: {}", name, escapedName(type)));
      return std::nullopt;
    }
    ValueId id = graph_.addGraphInput(name, *t, kind, {line, 1});
    declared_[name] = id;
    names_.insert(name);
    return id;
  }

  // The value argument `i` of node `n` refers to; a value defined outside the excerpt becomes
  // an input (or parameter) of the type it has here.
  std::optional<ValueId> resolve(const DumpNode& n, const std::vector<std::string>& args, size_t i) {
    const std::string& a = args[i];
    if (valueOf_.contains(a)) return valueOf_.at(a);
    const std::string& type = i < n.operandTypes.size() ? n.operandTypes[i] : std::string();
    if (auto p = dumpParamName(a)) return declare(ValueKind::Parameter, *p, type, n.line);
    if (!a.empty() && a[0] == '%') {
      auto v = declare(ValueKind::Input, uniqueName("in" + std::string(a, 1)), type, n.line);
      if (v) valueOf_[a] = *v;
      return v;
    }
    return std::nullopt;
  }

  void getItem(const DumpNode& n, const std::vector<std::string>& args) {
    auto index = dumpInt(args[1]);
    auto v = resolve(n, args, 0);
    if (!v || !index) return;
    const Value& tuple = graph_.value(*v);
    const std::vector<ValueId>* results = tuple.producer == kNoId ? nullptr : &graph_.op(tuple.producer).results;
    if (!results || *index < 0 || *index >= static_cast<int64_t>(results->size())) {
      diags_.error({n.line, 3}, fmt::format("{} takes item {} of '{}', which has {} result{}", n.ref, args[1], tuple.name,
                                            results ? results->size() : 1, results && results->size() == 1 ? "" : "s"));
      return;
    }
    valueOf_[n.ref] = (*results)[*index];
  }

  std::string uniqueName(const std::string& stem) {
    int& count = stems_[stem];
    std::string name;
    do name = ++count == 1 ? stem : fmt::format("{}{}", stem, count);
    while (names_.count(name));
    names_.insert(name);
    return name;
  }

  void importOp(const DumpNode& n, const std::vector<std::string>& args) {
    const SourceLoc loc{n.line, 3};
    const OpDef* def = findOpDef(n.type);
    if (!def || def->insertedOnly) {
      diags_.error(loc,
                   fmt::format("op {} ({}) has no counterpart in irc's op set{}; `irc --list-ops` lists it", n.ref, n.type,
                               def ? " (it is inserted by the passes, not written in a model)" : didYouMean(n.type, typeNames_)));
      return;
    }
    const std::string& stem = n.instance.empty() ? n.type : n.instance;
    if (!nameOk(stem, loc)) return;
    Op op;
    op.name = uniqueName(stem);
    op.instanceName = op.name;
    op.type = def->type;
    op.loc = loc;
    op.modelIndex = static_cast<int>(graph_.ops.size());
    if (!readOperands(n, args, *def, op) || !readAttrs(n, *def, op)) return;
    // A configured strategy is in primitive_attrs; a propagated one only on the type line.
    if (std::string s = attrValueOf(n.attrs, "in_strategy"); !s.empty() && s != "None") {
      auto strategy = dumpStrategy(s);
      if (!strategy) {
        diags_.error(loc, fmt::format("{}'s in_strategy {} is not a tuple of tuples of ints", n.ref, s));
        return;
      }
      op.annotation->inStrategy = *strategy;
      op.annotation->inStrategyLoc = loc;
    }
    std::vector<InferOperand> in;
    for (const Operand& o : op.operands)
      in.push_back({o.isValue() ? &graph_.value(o.value).type : nullptr, o.isValue() ? nullptr : &*o.constant});
    InferResult r = inferResultTypes(*def, in, op.attrs);
    if (auto* e = std::get_if<InferError>(&r)) {
      diags_.error(loc, fmt::format("{} ({}) '{}': {}", n.ref, op.type, op.name, e->message));
      return;
    }
    OpId id = graph_.addOp(std::move(op), std::get<std::vector<TensorType>>(r));
    graph_.order.push_back(id);
    valueOf_[n.ref] = graph_.op(id).results[0];
  }

  // Values and constants in the definition's operand order; constants left out take their
  // defaults. A number for a scalar operand takes the tensor operands' dtype, as in a model.
  bool readOperands(const DumpNode& n, const std::vector<std::string>& args, const OpDef& def, Op& op) {
    const SourceLoc loc{n.line, 3};
    positionalAttrs_.clear();
    const bool list = !def.operands.empty() && def.operands.back().kind == OperandKind::TensorList;
    for (size_t i = 0; i < args.size(); ++i) {
      if (i >= def.operands.size() && !list) {
        // MindSpore 2.x passes a primitive's attributes as its last inputs, in its signature's
        // order (`PrimFunc_MatMul(%1, %2, Bool(0), Bool(0))`), which is the definition's.
        if (i - def.operands.size() < def.attrs.size()) {
          positionalAttrs_[def.attrs[i - def.operands.size()].name] = args[i];
          continue;
        }
        diags_.error(loc, fmt::format("{} ({}) has {} operands; {} takes {} and {} attributes", n.ref, def.type, args.size(),
                                      def.type, def.operands.size(), def.attrs.size()));
        return false;
      }
      const OperandSpec& spec = def.operands[std::min(i, def.operands.size() - 1)];
      if (tuples_.contains(args[i])) {
        for (ValueId v : tuples_.at(args[i])) op.operands.push_back(Operand::ofValue(v));
      } else if (isReference(args[i])) {
        auto v = resolve(n, args, i);
        if (!v) return false;
        op.operands.push_back(Operand::ofValue(*v));
      } else if (auto c = constantOf(args[i], spec.kind)) {
        op.operands.push_back(Operand::ofConstant(*c));
      } else {
        diags_.error(loc, fmt::format("{} ({}): operand {} ('{}') is {}; expected {}", n.ref, def.type, i, spec.name, args[i],
                                      expected(spec.kind)));
        return false;
      }
    }
    for (size_t i = op.operands.size(); i < def.operands.size() && !list; ++i) {
      if (!def.operands[i].defaultValue) {
        diags_.error(loc, fmt::format("{} ({}) lacks operand '{}'", n.ref, def.type, def.operands[i].name));
        return false;
      }
      op.operands.push_back(Operand::ofConstant(*def.operands[i].defaultValue));
    }
    giveScalarsTensorDtype(graph_, op);
    return true;
  }

  bool readAttrs(const DumpNode& n, const OpDef& def, Op& op) {
    for (const AttrSpec& spec : def.attrs) {
      std::string text = attrValueOf(n.attrs, spec.name);
      if (positionalAttrs_.contains(spec.name) && (text.empty() || text == "None")) text = positionalAttrs_.at(spec.name);
      if (text.empty() || text == "None") {
        if (!spec.defaultValue) {
          diags_.error({n.line, 3}, fmt::format("{} ({}) lacks attribute '{}'", n.ref, def.type, spec.name));
          return false;
        }
        op.attrs[spec.name] = *spec.defaultValue;
      } else if (auto a = attrOf(text, spec.kind)) {
        op.attrs[spec.name] = *a;
      } else {
        diags_.error({n.line, 3}, fmt::format("{} ({}): attribute {} is {}; expected {}", n.ref, def.type, spec.name, text,
                                              expected(spec.kind)));
        return false;
      }
    }
    return true;
  }

  Graph& graph_;
  DiagnosticEngine& diags_;
  std::vector<std::string> typeNames_;
  std::map<std::string, ValueId> valueOf_;              // %N / %paraK_NAME -> value
  std::map<std::string, std::vector<ValueId>> tuples_;  // %N of a MakeTuple -> its operands
  std::map<std::string, ValueId> declared_;             // inputs and parameters by name
  std::set<std::string> names_;                         // every name taken
  std::map<std::string, int> stems_;
  std::map<std::string, std::string> positionalAttrs_;  // the node's attributes given as inputs (2.x)
};

// The most devices any strategy of the imported dump uses (a dump configures ops by strategies
// only), each measured by its op's own rule on as many devices as its entries multiply to: at
// least what it uses, and a multiple of it. A strategy the op rejects is reported when the
// model is compiled.
int64_t devicesUsedByStrategies(const Graph& imported) {
  RuleCache rules;
  int64_t most = 1;
  for (OpId id : imported.order) {
    const Op& op = imported.op(id);
    if (!op.annotation->inStrategy || ignoresConfiguredStrategy(defOf(op))) continue;
    std::optional<OpRule> rule = rules.ruleOf(imported, op);
    if (!rule) continue;
    int64_t entries = 1;
    for (const auto& dims : *op.annotation->inStrategy)
      for (int64_t n : dims) entries = n > 0 && entries <= kMaxDeviceNum / n ? entries * n : kMaxDeviceNum + 1;
    if (entries > kMaxDeviceNum) continue;
    ShardingResult r =
        shardingFromStrategy(*rule, viewOf(imported, op), *op.annotation->inStrategy, entries, op.annotation->outStrategy);
    if (const OpSharding* s = std::get_if<OpSharding>(&r)) most = std::max(most, devicesUsed(*rule, *s));
  }
  return most;
}

// The device count: the option, else the dump's header, else as many as its strategies use.
int64_t deviceNumOf(const DumpText& d, const ImportOptions& options, const Graph& imported) {
  if (options.deviceNum > 0) return options.deviceNum;
  if (auto text = d.headerAttr("device_num"))
    if (auto v = dumpInt(*text); v && *v > 0 && *v < 1'000'000'000) return *v;
  return devicesUsedByStrategies(imported);
}

}  // namespace

std::optional<LoadedGraph> importMindSporeDump(const std::string& text, const ImportOptions& options, DiagnosticEngine& diags) {
  DumpText d = readDumpText(text);
  if (auto defect = dumpDefect(d, text)) {
    int lastLine = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + (text.empty() || text.back() == '\n' ? 0 : 1);
    diags.error({std::max(1, lastLine), 1}, *defect);
    return std::nullopt;
  }
  LoadedGraph imported;
  DumpImporter importer(imported.graph, diags);
  if (!importer.importParams(d)) return std::nullopt;
  for (const DumpNode& n : d.nodes) importer.importNode(n);
  if (diags.hasErrors()) return std::nullopt;
  if (imported.graph.ops.empty()) {
    diags.error({1, 1}, "the dump has no op irc can import (expected node lines like '  %3(x) = MatMul(%1, %2) ...')");
    return std::nullopt;
  }
  imported.graph.name = !options.name.empty() ? options.name : d.entry.empty() ? "imported" : d.entry;
  if (auto problem = nameProblem(imported.graph.name)) {
    diags.error({1, 1}, fmt::format("the model's name {}; give one with --name", *problem));
    return std::nullopt;
  }
  imported.parallel.deviceNum = deviceNumOf(d, options, imported.graph);
  return imported;
}

}  // namespace irc
