#include "frontends/mindspore_import.h"

#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontends/parallel_facts.h"
#include "ops/op_defs.h"
#include "ir/suggest.h"

namespace irc {
namespace {

// `<Tensor[Float32], (64, 64)>` / `<Ref[Tensor(F32)], (64)>` -> dtype and shape in model form.
std::optional<std::pair<std::string, std::string>> tensorTypeOf(const std::string& type) {
  static const std::map<std::string, std::string> dtypes = {
      {"Float32", "float32"}, {"F32", "float32"}, {"Float16", "float16"}, {"F16", "float16"}, {"BFloat16", "bfloat16"},
      {"Float64", "float64"}, {"F64", "float64"}, {"Int32", "int32"},     {"I32", "int32"},     {"Int64", "int64"},
      {"I64", "int64"},       {"Int8", "int8"},   {"UInt8", "uint8"},     {"Bool", "bool"}};
  for (const auto& [printed, model] : dtypes) {
    if (type.find("[" + printed + "]") == std::string::npos && type.find("(" + printed + ")") == std::string::npos) continue;
    size_t open = type.find(", (");
    if (open == std::string::npos) return std::pair{model, std::string("[]")};
    size_t close = type.find(')', open);
    std::string dims = type.substr(open + 3, close == std::string::npos ? std::string::npos : close - open - 3);
    return std::pair{model, "[" + dims + "]"};
  }
  return std::nullopt;
}

// A printed attribute value in the model's YAML form: Bool(1) -> true, I64(3) -> 3, (1, 2) -> [1, 2].
std::string yamlValue(std::string v) {
  // A scalar tensor constant: the model writes its value (`inputs: [scores, 0.25]`).
  if (v.rfind("Tensor(shape=[]", 0) == 0) {
    size_t p = v.find("value=");
    if (p != std::string::npos) return v.substr(p + 6, v.find(')', p) - p - 6);
  }
  if (v == "Bool(1)" || v == "true") return "true";
  if (v == "Bool(0)" || v == "false") return "false";
  if (v.rfind("I64(", 0) == 0 || v.rfind("I32(", 0) == 0) return v.substr(4, v.size() - 5);
  for (char& c : v) {
    if (c == '(') c = '[';
    if (c == ')') c = ']';
  }
  return v;
}

// A YAML double-quoted scalar: quotes and backslashes escaped.
std::string quoted(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

namespace {

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

// Turns a dump's nodes into the model's YAML entries, one node at a time.
class DumpImporter {
 public:
  explicit DumpImporter(DiagnosticEngine& diags) : diags_(diags), typeNames_(modelOpTypeNames()) {}

  bool importParams(const DumpText& d) {
    for (const DumpParam& p : d.params) {
      if (!declare(p.hasDefault ? parameters_ : inputs_, p.name, p.type, p.line)) return false;
      valueOf_["%para" + std::to_string(&p - d.params.data() + 1) + "_" + p.name] = p.name;
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
        if (auto v = resolve(n, args, i)) tuples_[n.ref].push_back(quoted(*v));
      return;
    }
    if (n.type == "TupleGetItem" || n.type == "tuple_getitem") {
      if (args.size() == 2)
        if (auto v = resolve(n, args, 0)) valueOf_[n.ref] = fmt::format("{}:{}", *v, yamlValue(args[1]));
      return;
    }
    if (n.type == "Return") {
      for (size_t i = 0; i < args.size(); ++i) {
        if (auto t = tuples_.find(args[i]); t != tuples_.end()) outputs_.insert(outputs_.end(), t->second.begin(), t->second.end());
        else if (auto v = resolve(n, args, i)) outputs_.push_back(quoted(*v));
      }
      return;
    }
    importOp(n, args);
  }

  bool empty() const { return ops_.empty(); }

  std::string body() const {
    std::string out;
    if (!inputs_.empty()) out += "inputs:\n" + fmt::format("{}\n", fmt::join(inputs_, "\n"));
    if (!parameters_.empty()) out += "parameters:\n" + fmt::format("{}\n", fmt::join(parameters_, "\n"));
    out += "ops:\n" + fmt::format("{}\n", fmt::join(ops_, "\n"));
    if (!outputs_.empty()) out += fmt::format("outputs: [{}]\n", fmt::join(outputs_, ", "));
    return out;
  }

 private:
  bool declare(std::vector<std::string>& list, const std::string& name, const std::string& type, int line) {
    auto t = tensorTypeOf(type);
    if (!t) {
      diags_.error({line, 1}, fmt::format("the type of '{}' is not a tensor type irc knows: {}", name, type));
      return false;
    }
    if (!names_.insert(name).second) return true;
    list.push_back(fmt::format("  - {{name: {}, shape: {}, dtype: {}}}", quoted(name), t->second, t->first));
    return true;
  }

  // The model value argument `i` of node `n` refers to; a value defined outside the excerpt
  // becomes an input (or parameter) of the type it has here.
  std::optional<std::string> resolve(const DumpNode& n, const std::vector<std::string>& args, size_t i) {
    const std::string& a = args[i];
    if (auto it = valueOf_.find(a); it != valueOf_.end()) return it->second;
    if (auto p = paramName(a)) {
      if (!declare(parameters_, *p, operandTypeOf(n.typeLine, i), n.line)) return std::nullopt;
      return *p;
    }
    if (a.rfind("%", 0) == 0) {
      std::string name = "in" + a.substr(1);
      if (!declare(inputs_, name, operandTypeOf(n.typeLine, i), n.line)) return std::nullopt;
      valueOf_[a] = name;
      return name;
    }
    return std::nullopt;
  }

  void importOp(const DumpNode& n, const std::vector<std::string>& args) {
    const OpDef* def = findOpDef(n.type);
    if (!def || def->insertedOnly) {
      diags_.error({n.line, 3}, fmt::format("op {} ({}) has no counterpart in irc's op set{}; `irc --list-ops` lists it", n.ref,
                                            n.type,
                                            def ? " (it is inserted by the passes, not written in a model)" : didYouMean(n.type, typeNames_)));
      return;
    }
    std::string stem = n.instance.empty() ? n.type : n.instance;
    int count = ++stems_[stem];
    std::string name = count == 1 ? stem : fmt::format("{}{}", stem, count);
    valueOf_[n.ref] = name;
    std::vector<std::string> operands;
    for (size_t i = 0; i < args.size(); ++i) {
      if (auto t = tuples_.find(args[i]); t != tuples_.end()) operands.insert(operands.end(), t->second.begin(), t->second.end());
      else if (auto v = resolve(n, args, i)) operands.push_back(quoted(*v));
      else operands.push_back(yamlValue(args[i]));  // a constant operand (shape, perm, axis ...)
    }
    std::vector<std::string> attrs;
    for (const AttrSpec& spec : def->attrs)
      if (std::string v = attrValueOf(n.attrs, spec.name); !v.empty() && v != "None")
        attrs.push_back(fmt::format("{}: {}", spec.name, yamlValue(v)));
    std::string op = fmt::format("  - {{name: {}, type: {}, inputs: [{}]", quoted(name), def->type, fmt::join(operands, ", "));
    if (!attrs.empty()) op += fmt::format(", attrs: {{{}}}", fmt::join(attrs, ", "));
    // A configured strategy is in primitive_attrs; a propagated one only on the type line.
    if (std::string s = attrValueOf(n.attrs, "in_strategy"); !s.empty() && s != "None") op += fmt::format(", in_strategy: {}", yamlValue(s));
    ops_.push_back(op + "}");
  }

  DiagnosticEngine& diags_;
  std::vector<std::string> typeNames_;
  std::map<std::string, std::string> valueOf_;               // %N / %paraK_NAME -> model value name
  std::map<std::string, std::vector<std::string>> tuples_;   // %N of a MakeTuple -> its operands, resolved
  std::vector<std::string> inputs_, parameters_, ops_, outputs_;
  std::set<std::string> names_;
  std::map<std::string, int> stems_;
};

// The device count: the option, else the dump's header.
std::optional<int64_t> deviceNumOf(const DumpText& d, const ImportOptions& options) {
  if (options.deviceNum > 0) return options.deviceNum;
  for (const std::string& a : d.headerAttrs)
    if (a.rfind("device_num: ", 0) == 0) {
      std::string v = a.substr(12);
      if (!v.empty() && v.size() < 10 && v.find_first_not_of("0123456789") == std::string::npos && std::stoll(v) > 0)
        return std::stoll(v);
    }
  return std::nullopt;
}

}  // namespace

std::string ImportedDump::yaml(int64_t devices, bool fullyUseDevices) const {
  return fmt::format("# Imported by `irc import` from a dump; strategies are those the dump configured.\nname: {}\n"
                     "parallel: {{device_num: {}{}}}\n{}",
                     quoted(name), devices, fullyUseDevices ? "" : ", fully_use_devices: false", body);
}

std::optional<ImportedDump> importMindSporeDump(const std::string& text, const ImportOptions& options, DiagnosticEngine& diags) {
  DumpText d = readDumpText(text);
  DumpImporter importer(diags);
  if (!importer.importParams(d)) return std::nullopt;
  for (const DumpNode& n : d.nodes) importer.importNode(n);
  if (diags.hasErrors()) return std::nullopt;
  if (importer.empty()) {
    diags.error({1, 1}, "the dump has no op irc can import (expected node lines like '  %3(x) = MatMul(%1, %2) ...')");
    return std::nullopt;
  }
  std::string name = !options.name.empty() ? options.name : d.entry.empty() ? "imported" : d.entry;
  return ImportedDump{name, deviceNumOf(d, options), importer.body()};
}

}  // namespace irc
