#include "frontends/mindspore/mindspore_import.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

#include "frontends/mindspore/parallel_facts.h"
#include "ir/limits.h"
#include "ir/names.h"
#include "ir/suggest.h"
#include "ops/op_defs.h"
#include "ops/shape_inference.h"
#include "ir/trim.h"

namespace irc {
namespace {

// The whole of `s` as a number, nothing before or after it.
template <typename T>
std::optional<T> parsed(std::string_view s) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// `I64(3)` / `I32(3)` / `3`.
std::optional<int64_t> intOf(std::string_view s) {
  s = trimmed(s);
  if ((s.rfind("I64(", 0) == 0 || s.rfind("I32(", 0) == 0) && s.back() == ')') s = s.substr(4, s.size() - 5);
  return parsed<int64_t>(s);
}

// `(1, 2)`, `[1, 2]`, `()`.
std::optional<IntTuple> tupleOf(std::string_view s) {
  s = trimmed(s);
  if (s.size() < 2 || !((s.front() == '(' && s.back() == ')') || (s.front() == '[' && s.back() == ']'))) return std::nullopt;
  IntTuple out;
  std::string_view items = trimmed(s.substr(1, s.size() - 2));
  while (!items.empty()) {
    size_t comma = items.find(',');
    auto v = intOf(items.substr(0, comma));
    if (!v) return std::nullopt;
    out.push_back(*v);
    if (comma == std::string_view::npos) break;
    items = trimmed(items.substr(comma + 1));
  }
  return out;
}

// `((2, 1), (1, 4))`: a strategy, one tuple per operand.
std::optional<ShardStrategy> strategyOf(const std::string& s) {
  std::string_view t = trimmed(s);
  if (t.size() < 2 || t.front() != '(' || t.back() != ')') return std::nullopt;
  ShardStrategy out;
  for (const std::string& item : splitArgs(std::string(t)))
    if (auto tuple = tupleOf(item)) out.push_back(*tuple);
    else return std::nullopt;
  return out;
}

std::optional<double> numberOf(std::string_view s) {
  s = trimmed(s);
  if (s.rfind("F32(", 0) == 0 || s.rfind("F64(", 0) == 0) s = s.substr(4, s.size() - 5);
  return parsed<double>(s);
}

std::optional<bool> boolOf(std::string_view s) {
  s = trimmed(s);
  if (s == "true" || s == "True" || s == "Bool(1)") return true;
  if (s == "false" || s == "False" || s == "Bool(0)") return false;
  return std::nullopt;
}

// A dtype as dumps print it: `Float32` (irc, MindSpore 1.x), `F32` (2.x).
std::optional<DType> dtypeOf(std::string_view s) {
  static const std::map<std::string_view, std::string_view> shortNames = {
      {"F32", "float32"}, {"F16", "float16"}, {"BF16", "bfloat16"}, {"F64", "float64"},
      {"I32", "int32"},   {"I64", "int64"},   {"I8", "int8"},       {"U8", "uint8"}};
  s = trimmed(s);
  if (auto it = shortNames.find(s); it != shortNames.end()) return parseDType(it->second);
  return parseDumpDType(s);
}

// `<Tensor[Float32], (64, 64)>` / `<Ref[Tensor(F32)], (64)>` / `<Tensor[Float32], ()>`.
std::optional<TensorType> tensorTypeOf(const std::string& type) {
  size_t open = type.find_first_of("[(", type.find("Tensor"));
  if (type.find("Tensor") == std::string::npos || open == std::string::npos) return std::nullopt;
  size_t close = type.find_first_of("])", open + 1);
  if (close == std::string::npos) return std::nullopt;
  std::string_view name(type.data() + open + 1, close - open - 1);
  if (name.rfind("Tensor(", 0) == 0) name.remove_prefix(7);
  auto dtype = dtypeOf(name);
  if (!dtype) return std::nullopt;
  size_t dims = type.find(", (", close);
  if (dims == std::string::npos) return TensorType{*dtype, {}};
  size_t end = type.find(')', dims);
  auto shape = tupleOf(std::string_view(type).substr(dims + 2, end == std::string::npos ? std::string::npos : end - dims - 1));
  if (!shape || !withinElementLimit(*shape)) return std::nullopt;
  for (int64_t d : *shape)
    if (d < 1) return std::nullopt;
  return TensorType{*dtype, *shape};
}

// `Tensor(shape=[], dtype=Float32, value=0.25)` or a plain number.
std::optional<ScalarTensor> scalarOf(std::string_view s) {
  s = trimmed(s);
  if (s.rfind("Tensor(shape=[]", 0) != 0) {
    if (auto v = numberOf(s)) return ScalarTensor{DType::Float32, *v};
    return std::nullopt;
  }
  size_t d = s.find("dtype="), v = s.find("value=");
  if (d == std::string_view::npos || v == std::string_view::npos) return std::nullopt;
  auto dtype = dtypeOf(s.substr(d + 6, s.find(',', d) - d - 6));
  auto value = numberOf(s.substr(v + 6, s.find(')', v) - v - 6));
  if (!dtype || !value) return std::nullopt;
  return ScalarTensor{*dtype, *value};
}

std::optional<Attribute> constantOf(const std::string& text, OperandKind kind) {
  switch (kind) {
    case OperandKind::Int:
      if (auto v = intOf(text)) return Attribute(*v);
      return std::nullopt;
    case OperandKind::IntOrTuple:
      if (auto v = intOf(text)) return Attribute(*v);
      [[fallthrough]];
    case OperandKind::Tuple:
      if (auto v = tupleOf(text)) return Attribute(*v);
      return std::nullopt;
    case OperandKind::DTypeConst:
      if (auto v = dtypeOf(text)) return Attribute(*v);
      return std::nullopt;
    case OperandKind::TensorOrScalar:
      if (auto v = scalarOf(text)) return Attribute(*v);
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
      if (auto v = boolOf(text)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::Int:
      if (auto v = intOf(text)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::Float:
      if (auto v = numberOf(text)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::IntOrTuple:
      if (auto v = intOf(text)) return Attribute(*v);
      if (auto v = tupleOf(text)) return Attribute(*v);
      return std::nullopt;
    case AttrKind::String: {
      std::string_view s = trimmed(text);
      if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
      return Attribute(std::string(s));
    }
  }
  return std::nullopt;
}

// A parameter reference: `%paraK_NAME` or 2.x's `$(@graph:paraK_NAME)`.
std::optional<std::string> paramName(const std::string& ref) {
  size_t p = ref.find("para");
  if (p == std::string::npos || (ref[0] != '%' && ref[0] != '$')) return std::nullopt;
  size_t underscore = ref.find('_', p);
  if (underscore == std::string::npos) return std::nullopt;
  std::string name = ref.substr(underscore + 1);
  if (!name.empty() && name.back() == ')') name.pop_back();
  return name;
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
      for (const std::string& arg : splitArgs(n.args))
        if (auto name = paramName(arg)) names_.insert(*name);
    for (const DumpParam& p : d.params) {
      auto v = declare(p.hasDefault ? ValueKind::Parameter : ValueKind::Input, p.name, p.type, p.line);
      if (!v) return false;
      valueOf_["%para" + std::to_string(&p - d.params.data() + 1) + "_" + p.name] = *v;
    }
    return true;
  }

  void importNode(const DumpNode& n) {
    std::vector<std::string> args = splitArgs(n.args);
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
        if (auto t = tuples_.find(args[i]); t != tuples_.end())
          graph_.outputs.insert(graph_.outputs.end(), t->second.begin(), t->second.end());
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
    if (auto it = declared_.find(name); it != declared_.end()) return it->second;
    if (!nameOk(name, {line, 1})) return std::nullopt;
    auto t = tensorTypeOf(type);
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
    if (auto it = valueOf_.find(a); it != valueOf_.end()) return it->second;
    if (auto p = paramName(a)) return declare(ValueKind::Parameter, *p, operandTypeOf(n.typeLine, i), n.line);
    if (a.rfind("%", 0) == 0) {
      auto v = declare(ValueKind::Input, uniqueName("in" + a.substr(1)), operandTypeOf(n.typeLine, i), n.line);
      if (v) valueOf_[a] = *v;
      return v;
    }
    return std::nullopt;
  }

  void getItem(const DumpNode& n, const std::vector<std::string>& args) {
    auto index = intOf(args[1]);
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
      auto strategy = strategyOf(s);
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
      if (auto t = tuples_.find(args[i]); t != tuples_.end()) {
        for (ValueId v : t->second) op.operands.push_back(Operand::ofValue(v));
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
      if (auto it = positionalAttrs_.find(spec.name); it != positionalAttrs_.end() && (text.empty() || text == "None"))
        text = it->second;
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

// The device count: the option, else the dump's header.
std::optional<int64_t> deviceNumOf(const DumpText& d, const ImportOptions& options) {
  if (options.deviceNum > 0) return options.deviceNum;
  for (const std::string& a : d.headerAttrs)
    if (a.rfind("device_num: ", 0) == 0)
      if (auto v = intOf(a.substr(12)); v && *v > 0 && *v < 1'000'000'000) return *v;
  return std::nullopt;
}

}  // namespace

std::optional<ImportedDump> importMindSporeDump(const std::string& text, const ImportOptions& options, DiagnosticEngine& diags) {
  DumpText d = readDumpText(text);
  if (auto defect = dumpDefect(d, text)) {
    int lastLine = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + (text.empty() || text.back() == '\n' ? 0 : 1);
    diags.error({std::max(1, lastLine), 1}, *defect);
    return std::nullopt;
  }
  ImportedDump imported;
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
  imported.deviceNum = deviceNumOf(d, options);
  return imported;
}

}  // namespace irc
