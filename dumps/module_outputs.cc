#include "dumps/module_outputs.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "ir/sharding.h"
#include "ops/collective.h"
#include "ops/op_defs.h"
#include "ops/op_family.h"

namespace irc {
namespace {

bool communicates(const Op& op) {
  std::optional<CollectiveKind> kind = collectiveOfFamily(familyOf(op));
  return kind && *kind != CollectiveKind::PointToPoint;
}

bool inside(const std::string& path, const std::string& module) {
  return path == module ||
         (path.size() > module.size() && path.compare(0, module.size(), module) == 0 && path[module.size()] == '.');
}

// The model ops that read `v`, through the inserted ops between (a consumer's redistribution,
// the producer's forward ops), and whether it (or what the forward ops made of it) is a graph
// output.
struct Readers {
  std::vector<OpId> ops;
  bool graphOutput = false;
};

Readers readersOf(const Graph& graph, const std::vector<std::vector<Use>>& uses, const std::vector<char>& isOutput, ValueId v) {
  Readers r;
  std::vector<ValueId> pending{v};
  while (!pending.empty()) {
    ValueId at = pending.back();
    pending.pop_back();
    if (isOutput[at]) r.graphOutput = true;
    for (const Use& u : uses[at]) {
      const Op& op = graph.op(u.op);
      if (!op.inserted()) {
        if (std::find(r.ops.begin(), r.ops.end(), u.op) == r.ops.end()) r.ops.push_back(u.op);
        continue;
      }
      pending.insert(pending.end(), op.results.begin(), op.results.end());
    }
  }
  return r;
}

// The DTensor placement of `layout` on the declared mesh's dim `index` (counting its dims of more
// than one device), as Python writes it; nullopt when the layout's device matrix is not that mesh.
std::optional<std::string> placementOn(const TensorLayout& layout, const std::vector<int64_t>& bigDims, size_t index) {
  TensorLayout s = layout.standardForm();
  if (s.usedAxes().empty() && !s.isPartial()) return "Replicate()";
  if (s.mesh.dims != bigDims || index >= bigDims.size()) return std::nullopt;
  int axis = static_cast<int>(index);
  if (std::find(s.partialAxes.begin(), s.partialAxes.end(), axis) != s.partialAxes.end())
    return s.partialOp == ReduceOp::Sum ? std::string("Partial()") : fmt::format("Partial(\"{}\")", reduceOpName(s.partialOp));
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (std::find(s.dims[d].begin(), s.dims[d].end(), axis) != s.dims[d].end()) {
      if (s.dims[d].size() > 1) return std::nullopt;  // one dim over several axes: no single placement
      return fmt::format("Shard({})", d);
    }
  return "Replicate()";
}

// What the analysis reads, gathered once.
struct Plan {
  explicit Plan(const Graph& g) : graph(g) {}
  const Graph& graph;
  std::map<std::string, const Graph::ModuleStyle*> styleOf;
  std::vector<int64_t> bigDims;            // the declared mesh's dims of more than one device
  std::map<std::string, size_t> bigIndex;  // a mesh dim's name -> its position among them
  std::string defaultAxis;
  std::vector<char> isOutput;
  std::vector<std::vector<Use>> uses;
  // Per module, the values its ops hand to ops outside it or to the graph's outputs.
  std::map<std::string, std::vector<std::pair<ValueId, Readers>>> leaving;

  bool linearStyled(const std::string& module) const {
    auto it = styleOf.find(module);
    return it != styleOf.end() && (it->second->style == "colwise" || it->second->style == "rowwise");
  }
  std::string axisOf(const std::string& module) const {
    auto it = styleOf.find(module);
    return it != styleOf.end() ? it->second->axis : defaultAxis;
  }
  std::optional<std::string> placement(const TensorLayout& layout, const std::string& axis) const {
    auto bi = bigIndex.find(axis);
    if (bi == bigIndex.end()) return std::nullopt;
    return placementOn(layout, bigDims, bi->second);
  }
};

Plan readPlan(const Graph& graph, const std::vector<Graph::ModuleStyle>& styles, const std::vector<std::string>& meshNames,
              const std::vector<int64_t>& meshDims) {
  Plan plan(graph);
  for (const auto& s : styles) plan.styleOf.emplace(s.module, &s);
  for (size_t a = 0; a < meshDims.size(); ++a)
    if (meshDims[a] > 1) {
      plan.bigIndex[meshNames[a]] = plan.bigDims.size();
      plan.bigDims.push_back(meshDims[a]);
    }
  plan.defaultAxis = meshNames.empty() ? "tp" : meshNames.back();
  plan.isOutput.assign(graph.values.size(), 0);
  for (ValueId v : graph.outputs) plan.isOutput[v] = 1;
  plan.uses = computeUses(graph);
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() || op.modulePath < 0) continue;
    const std::string& module = graph.moduleOf(op);
    for (ValueId r : op.results) {
      Readers readers = readersOf(graph, plan.uses, plan.isOutput, r);
      bool leaves = readers.graphOutput;
      for (OpId c : readers.ops)
        if (!inside(graph.moduleOf(graph.op(c)), module)) leaves = true;
      if (leaves) plan.leaving[module].emplace_back(r, std::move(readers));
    }
  }
  return plan;
}

// A conversion irc makes of a module's output: for all its readers (the producer's forward ops),
// or on one reader's edge into a plain op (DTensor runs a plain op on what it is handed).
struct Conversion {
  ValueId value;
  TensorLayout from, to;
  bool forAll;
};

std::vector<Conversion> conversionsOfModuleOutputs(const Plan& plan) {
  const Graph& graph = plan.graph;
  std::vector<Conversion> found;
  std::map<OpId, bool> converted;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() && op.role == InsertedRole::ForwardOp && op.owner != kNoId && communicates(op)) converted[op.owner] = true;
  }
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() || op.modulePath < 0 || !converted.count(id)) continue;
    // A Linear's or Embedding's own completion (its partial sums' AllReduce) or its style's
    // output_layouts, which the style (or, left out, the module's warning) says.
    ModulePart::Kind part = rulesOf(op).modulePart(op).kind;
    if (plan.linearStyled(graph.moduleOf(op)) || part == ModulePart::Kind::Product || part == ModulePart::Kind::Lookup ||
        part == ModulePart::Kind::Bias)
      continue;
    for (size_t ri = 0; ri < op.results.size() && ri < op.parallel->outputLayouts.size(); ++ri)
      if (const Value& v = graph.value(op.results[ri]); v.layout)
        found.push_back({op.results[ri], op.parallel->outputLayouts[ri], *v.layout, true});
  }
  for (const RedistributionRecord& edge : graph.redistributions) {
    if (edge.ops.empty() || std::none_of(edge.ops.begin(), edge.ops.end(), [&](OpId o) { return communicates(graph.op(o)); }))
      continue;
    OpId reader = graph.op(edge.ops.back()).owner;
    if (reader == kNoId || plan.linearStyled(graph.moduleOf(graph.op(reader)))) continue;  // the style converts
    OpId producer = graph.value(edge.value).producer;
    if (producer == kNoId || graph.op(producer).modulePath < 0) continue;
    found.push_back({edge.value, edge.from, edge.to, false});
  }
  return found;
}

// The placement a styled Linear's output leaves it in under DTensor: output_layouts, else the
// style's default (colwise: Shard(-1); rowwise: Replicate()); nullopt for other modules.
std::optional<std::string> styleOutput(const Plan& plan, const std::string& module, const Value& v) {
  auto it = plan.styleOf.find(module);
  if (it == plan.styleOf.end() || !plan.linearStyled(module)) return std::nullopt;
  std::string given = it->second->outputLayouts;
  given.erase(std::remove_if(given.begin(), given.end(), [](char ch) { return ch == '[' || ch == ']' || ch == ' '; }),
              given.end());
  if (given.empty()) given = it->second->style == "colwise" ? "Shard(-1)" : "Replicate()";
  if (given == "Shard(-1)") given = fmt::format("Shard({})", static_cast<int64_t>(v.type.shape.size()) - 1);
  return given;
}

// PrepareModuleOutput where a conversion is of a module's one output, once (or on its one
// reader's edge); a warning where DTensor would convert otherwise than irc does.
void prepareModuleOutputs(const Plan& plan, ModuleOutputs& out) {
  const Graph& graph = plan.graph;
  std::vector<Conversion> conversions = conversionsOfModuleOutputs(plan);
  std::map<ValueId, int> edgesOf;
  for (const Conversion& c : conversions) edgesOf[c.value] += c.forAll ? 0 : 1;
  std::set<ValueId> done;
  for (const Conversion& c : conversions) {
    if (!done.insert(c.value).second) continue;
    const std::string& module = graph.moduleOf(graph.op(graph.value(c.value).producer));
    std::string axis = plan.axisOf(module);
    auto leaving = plan.leaving.find(module);
    const Readers* readers = nullptr;
    if (leaving != plan.leaving.end())
      for (const auto& [v, r] : leaving->second)
        if (v == c.value) readers = &r;
    if (!readers) continue;  // read inside its module only
    auto styledReader = [&](OpId r) { return plan.linearStyled(graph.moduleOf(graph.op(r))); };
    bool linearReaders =
        !readers->ops.empty() && !readers->graphOutput && std::all_of(readers->ops.begin(), readers->ops.end(), styledReader);
    bool plainReaders = std::none_of(readers->ops.begin(), readers->ops.end(), styledReader);
    std::optional<std::string> from = plan.placement(c.from, axis), to = plan.placement(c.to, axis);
    bool oneEdge = c.forAll || (edgesOf[c.value] == 1 && readers->ops.size() == 1 && !readers->graphOutput);
    if (leaving->second.size() != 1 || !from || !to || (!linearReaders && !plainReaders) || !oneEdge) {
      out.warnings.push_back(
          fmt::format("{}: irc converts its output '{}' ({} to {}) where DTensor, running a plain op on what it is handed, "
                      "would not; PrepareModuleOutput says it only for a module with one output converted once for readers that "
                      "are all styled Linears or all plain ops, on one mesh dim",
                      module, graph.value(c.value).name, from.value_or("?"), to.value_or("?")));
      continue;
    }
    // A styled Linear hands on what its style says; irc's plan must agree for the hook to read it.
    if (std::optional<std::string> styled = styleOutput(plan, module, graph.value(c.value)); styled && *styled != *from) {
      out.warnings.push_back(
          fmt::format("{}: irc's plan hands its output '{}' on as {}, its DTensor style as {}; "
                      "DTensor's run differs from irc's there",
                      module, graph.value(c.value).name, *from, *styled));
      continue;
    }
    if (*from != *to) out.conversions.push_back({module, axis, *from, *to, linearReaders});
  }
}

// Input placements the plan left to DTensor's default where the input arrives otherwise.
void arrivingInputs(const Plan& plan, ModuleOutputs& out) {
  const Graph& graph = plan.graph;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() || op.modulePath < 0 || !op.parallel->layoutsInferred) continue;
    auto styleIt = plan.styleOf.find(graph.moduleOf(op));
    if (styleIt == plan.styleOf.end() || !styleIt->second->inputLayouts.empty() || !plan.linearStyled(styleIt->first)) continue;
    ModulePart part = rulesOf(op).modulePart(op);
    if (part.kind != ModulePart::Kind::Product || part.input < 0 || !op.operands[part.input].isValue()) continue;
    ValueId read = op.operands[part.input].value;
    // Back through the consumer's redistribution to the value as its producer hands it on.
    while (graph.value(read).producer != kNoId && graph.op(graph.value(read).producer).inserted() &&
           graph.op(graph.value(read).producer).role == InsertedRole::Redistribution)
      read = graph.op(graph.value(read).producer).operands[0].value;
    const Value& v = graph.value(read);
    if (!v.layout) continue;
    std::optional<std::string> arrives = plan.placement(*v.layout, styleIt->second->axis);
    std::string fallback =
        styleIt->second->style == "colwise" ? "Replicate()" : fmt::format("Shard({})", v.type.shape.size() - 1);
    if (arrives && *arrives != fallback) out.inputLayouts.emplace(styleIt->first, *arrives);
  }
}

// loss_parallel: a colwise module's output leaving the graph split on its last dim.
void lossParallelModules(const Plan& plan, const std::vector<Graph::ModuleStyle>& styles, ModuleOutputs& out) {
  for (const auto& s : styles) {
    auto leaving = plan.leaving.find(s.module);
    if (s.style != "colwise" || leaving == plan.leaving.end()) continue;
    for (const auto& [value, readers] : leaving->second) {
      const Value& v = plan.graph.value(value);
      if (!readers.graphOutput || !v.layout || v.type.shape.empty()) continue;
      std::optional<std::string> p = plan.placement(*v.layout, s.axis);
      if (p && *p == fmt::format("Shard({})", v.type.shape.size() - 1)) {
        out.lossParallel.push_back(s.module);
        break;
      }
    }
  }
}

}  // namespace

ModuleOutputs moduleOutputConversions(const Graph& graph, const std::vector<Graph::ModuleStyle>& styles,
                                      const std::vector<std::string>& meshNames, const std::vector<int64_t>& meshDims) {
  Plan plan = readPlan(graph, styles, meshNames, meshDims);
  ModuleOutputs out;
  prepareModuleOutputs(plan, out);
  arrivingInputs(plan, out);
  lossParallelModules(plan, styles, out);
  return out;
}

}  // namespace irc
