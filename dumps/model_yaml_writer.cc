#include "dumps/model_yaml_writer.h"

#include <cmath>

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
  static const char* const kReserved[] = {"true", "false", "null", "yes", "no", "on", "off", "True", "False", "Null",
                                          "TRUE", "FALSE", "NULL", "Yes", "No", "On", "Off", "YES", "NO", "ON", "OFF", "y", "n"};
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
    out += fmt::format("  - {{name: {}, shape: {}, dtype: {}}}\n", yamlName(v.name), yamlInts(v.type.shape), modelName(v.type.dtype));
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

}  // namespace

std::string writeModelYaml(const Graph& graph, const ParallelSettings* settings) {
  const ParallelSettings& parallel = settings ? *settings : graph.parallel;
  std::string out;
  out += fmt::format("name: {}\n", yamlName(graph.name));
  out += fmt::format("parallel: {{device_num: {}, search_mode: {}}}\n", parallel.deviceNum, searchModeName(parallel.searchMode));
  writeTensors(out, graph, graph.inputs, "inputs");
  writeTensors(out, graph, graph.parameters, "parameters");
  out += "ops:\n";
  for (OpId id : graph.order) writeOp(out, graph, graph.op(id));
  std::vector<std::string> outputs;
  for (ValueId v : graph.outputs) outputs.push_back(valueRef(graph, v));
  // Without outputs (a dump excerpt without its Return) the model's unused results are.
  if (!outputs.empty()) out += fmt::format("outputs: [{}]\n", fmt::join(outputs, ", "));
  return out;
}

}  // namespace irc
