#include "dumps/report.h"

#include <algorithm>

#include <fmt/format.h>

#include "dumps/ir_printer.h"
#include "dumps/origin_text.h"
#include "ir/inserted_ops.h"

namespace irc {
namespace {


using json = nlohmann::ordered_json;

json tensorMapJson(const TensorLayout& l) {
  json map = json::array();
  for (const auto& e : l.tensorMapEntries()) {
    if (e.empty()) map.push_back(-1);
    else if (e.size() == 1) map.push_back(e[0]);
    else map.push_back(e);
  }
  return map;
}

json layoutJson(const TensorLayout& l, bool withDevMatrix) {
  json j;
  if (withDevMatrix) j["dev_matrix"] = l.mesh.dims;
  j["tensor_map"] = tensorMapJson(l);
  j["partial"] = l.partialFromRight();
  if (l.isPartial()) j["partial_op"] = std::string(reduceOpName(l.partialOp));
  return j;
}

json originJson(const Graph& graph, const StrategyOrigin& o) {
  std::string from = originSourceName(graph, o);
  json j;
  switch (o.kind) {
    case OriginKind::User: j["kind"] = "user"; break;
    case OriginKind::Default: j["kind"] = "default"; break;
    case OriginKind::Tensor:
      j["kind"] = "tensor";
      if (!from.empty()) j["from"] = from;
      if (o.edge != StrategyOrigin::Edge::None) j["edge_cost"] = o.cost;
      break;
    case OriginKind::Propagated:
      j["kind"] = "propagated";
      j["from"] = from;
      j["edge_cost"] = o.cost;
      if (o.hasNextBest) j["next_best"] = {{"in_strategy", formatStrategy(o.nextBest)}, {"edge_cost", o.nextBestCost}};
      break;
  }
  return j;
}

// An inserted op as the report lists it: type and attrs for the rank (bounds as lists).
json insertedOpJson(const Graph& graph, OpId id, int64_t rank) {
  Op op = graph.op(id);
  materializeForRank(op, rank);
  json attrs = json::object();
  for (const auto& [k, v] : op.attrs) {
    if (k == "group_ranks") attrs[k] = stepGroup(*op.step, rank);  // the group as numbers, from the op's step
    else if (auto* i = std::get_if<int64_t>(&v)) attrs[k] = *i;
    else if (auto* s = std::get_if<std::string>(&v)) attrs[k] = *s;
    else if (auto* b = std::get_if<bool>(&v)) attrs[k] = *b;
    else attrs[k] = formatAttribute(v);
  }
  if (op.family() == OpFamily::StridedSlice) {
    attrs["begin"] = std::get<IntTuple>(*op.operands[1].constant);
    attrs["end"] = std::get<IntTuple>(*op.operands[2].constant);
    attrs["strides"] = std::get<IntTuple>(*op.operands[3].constant);
  }
  if (op.family() == OpFamily::Reshape) attrs["shape"] = std::get<IntTuple>(*op.operands[1].constant);
  if (op.step && op.step->kind == RedistStep::Kind::RealDiv) attrs["divisor"] = std::get<ScalarTensor>(*op.operands[1].constant).value;
  json j;
  j["type"] = op.type;
  j["attrs"] = attrs;
  if (!op.reason.empty()) j["reason"] = op.reason;
  return j;
}

double sendBytes(const Graph& graph, const Op& op) {
  if (!op.step || opTypeOfStep(*op.step) != op.type) return 0;
  return stepSendBytes(*op.step, byteSize(graph.value(op.results[0]).type.dtype));
}

}  // namespace

CompileTotals compileTotals(const Graph& graph) {
  CompileTotals t;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (!op.inserted()) continue;
    ++t.insertedByType[op.type];
    t.commBytesPerRank += sendBytes(graph, op);
    if (op.step) t.gradBytesPerRank += mirrorGradientBytes(*op.step, byteSize(graph.value(op.results[0]).type.dtype));
  }
  for (ValueId p : graph.parameters) {
    const Value& v = graph.value(p);
    Shape local = v.layout ? v.layout->sliceShape() : v.type.shape;
    t.paramBytesPerRank += static_cast<double>(numElements(local)) * byteSize(v.type.dtype);
  }
  return t;
}

json buildReport(const Graph& graph, const CompileOptions& options, int64_t rank) {
  json report;
  report["schema_version"] = 1;
  report["model"] = graph.name;
  report["device_num"] = options.deviceNum;
  report["global_rank"] = rank;
  report["search_mode"] = std::string(searchModeName(options.searchMode));

  // Forward ops of each model op.
  std::map<std::string, std::vector<OpId>> forward;
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.role == InsertedRole::ForwardOp) forward[graph.op(op.owner).name].push_back(id);
  }

  json ops = json::array();
  json values = json::array();
  auto valueJson = [&](ValueId id, const std::optional<TensorLayout>& layout, const StrategyOrigin* origin) {
    const Value& v = graph.value(id);
    json j;
    j["name"] = v.name;
    j["shape"] = v.type.shape;
    j["dtype"] = std::string(modelName(v.type.dtype));
    if (layout) {
      json l = layoutJson(*layout, true);
      for (auto& [k, x] : l.items()) j[k] = x;
    }
    if (origin) j["origin"] = originJson(graph, *origin);
    else j["origin"] = v.sharding ? json{{"kind", "tensor"}} : json{{"kind", "default"}};
    values.push_back(j);
  };
  for (const auto* list : {&graph.inputs, &graph.parameters})
    for (ValueId id : *list) valueJson(id, graph.value(id).layout, nullptr);

  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted()) continue;
    const OpParallelState& p = op.parallel;
    json j;
    j["name"] = op.name;
    j["type"] = op.type;
    if (op.takesLayoutsFromNeighbours() || !p.hasSharding) j["in_strategy"] = nullptr;
    else j["in_strategy"] = p.inStrategy;
    if (p.outStrategy) j["out_strategy"] = *p.outStrategy;
    j["origin"] = originJson(graph, p.origin);
    if (p.layoutsInferred) {
      j["dev_matrix"] = p.sharding.mesh.dims;
      json inputs = json::array();
      int k = 0;
      for (const Operand& o : op.operands) {
        if (!o.isValue()) continue;
        const TensorLayout& l = p.inputLayouts[k++];
        json in;
        in["value"] = graph.value(modelValueBehind(graph, o.value)).name;
        in["shape"] = l.shape;
        json layout = layoutJson(l, false);  // named: items() must not outlive it
        for (auto& [key, x] : layout.items()) in[key] = x;
        in["slice_shape"] = l.sliceShape();
        inputs.push_back(in);
      }
      j["inputs"] = inputs;
      json outputs = json::array();
      for (const TensorLayout& l : p.outputLayouts) {
        json out;
        out["shape"] = l.shape;
        json layout = layoutJson(l, false);
        for (auto& [key, x] : layout.items()) out[key] = x;
        out["slice_shape"] = l.sliceShape();
        outputs.push_back(out);
      }
      j["outputs"] = outputs;
    }
    json fwd = json::array();
    for (OpId f : forward[op.name]) fwd.push_back(insertedOpJson(graph, f, rank));
    j["forward_ops"] = fwd;
    ops.push_back(j);
    for (size_t r = 0; r < op.results.size(); ++r)
      valueJson(op.results[r], p.layoutsInferred ? std::optional(p.finalLayouts[r]) : std::nullopt, &p.origin);
  }
  report["ops"] = ops;
  report["values"] = values;

  json redistributions = json::array();
  for (const RedistributionRecord& rec : graph.redistributions) {
    json j;
    j["value"] = graph.value(rec.value).name;
    j["consumer"] = rec.consumer;
    j["input_index"] = rec.inputIndex;
    j["from"] = layoutJson(rec.from, true);
    j["to"] = layoutJson(rec.to, true);
    j["reason"] = rec.reason;
    json list = json::array();
    double bytes = 0;
    for (OpId id : rec.ops) {
      list.push_back(insertedOpJson(graph, id, rank));
      bytes += sendBytes(graph, graph.op(id));
    }
    j["ops"] = list;
    j["comm_bytes_per_rank"] = bytes;
    redistributions.push_back(j);
  }
  report["redistributions"] = redistributions;
  // A training graph's mirrors: the gradient AllReduce each one stands for.
  json mirrors = json::array();
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (!op.inserted() || !op.step || op.step->kind != RedistStep::Kind::Mirror) continue;
    json j = insertedOpJson(graph, id, rank);
    j["name"] = op.name;
    j["parameter"] = graph.value(modelValueBehind(graph, op.operands[0].value)).name;
    j["grad_comm_bytes_per_rank"] = mirrorGradientBytes(*op.step, byteSize(graph.value(op.results[0]).type.dtype));
    mirrors.push_back(j);
  }
  report["mirror_ops"] = mirrors;
  CompileTotals totals = compileTotals(graph);
  int inserted = 0;
  for (const auto& [type, n] : totals.insertedByType) inserted += n;
  report["totals"] = {{"comm_bytes_per_rank", totals.commBytesPerRank},
                      {"param_bytes_per_rank", totals.paramBytesPerRank},
                      {"inserted_ops", inserted},
                      {"grad_comm_bytes_per_rank", totals.gradBytesPerRank}};
  return report;
}

}  // namespace irc
