#include "dumps/report.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "dumps/ir_printer.h"
#include "dumps/json_stream.h"
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

namespace {

json valueJson(const Graph& graph, ValueId id, const std::optional<TensorLayout>& layout, const StrategyOrigin* origin) {
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
  return j;
}

// One operand or result of an op: its global shape, layout and slice shape.
json tensorJson(const TensorLayout& l) {
  json j;
  j["shape"] = l.shape;
  json layout = layoutJson(l, false);  // named: items() must not outlive it
  for (auto& [key, x] : layout.items()) j[key] = x;
  j["slice_shape"] = l.sliceShape();
  return j;
}

json opJson(const Graph& graph, const Op& op, const std::vector<OpId>& forwardOps, int64_t rank) {
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
      json in;
      in["value"] = graph.value(modelValueBehind(graph, o.value)).name;
      json tensor = tensorJson(p.inputLayouts[k++]);  // named: items() must not outlive it
      for (auto& [key, x] : tensor.items()) in[key] = x;
      inputs.push_back(in);
    }
    j["inputs"] = inputs;
    json outputs = json::array();
    for (const TensorLayout& l : p.outputLayouts) outputs.push_back(tensorJson(l));
    j["outputs"] = outputs;
  }
  json fwd = json::array();
  for (OpId f : forwardOps) fwd.push_back(insertedOpJson(graph, f, rank));
  j["forward_ops"] = fwd;
  return j;
}

json redistributionJson(const Graph& graph, const RedistributionRecord& rec, int64_t rank) {
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
  return j;
}

// A training graph's mirror: the gradient AllReduce it stands for.
json mirrorJson(const Graph& graph, OpId id, int64_t rank) {
  const Op& op = graph.op(id);
  json j = insertedOpJson(graph, id, rank);
  j["name"] = op.name;
  j["parameter"] = graph.value(modelValueBehind(graph, op.operands[0].value)).name;
  j["grad_comm_bytes_per_rank"] = mirrorGradientBytes(*op.step, byteSize(graph.value(op.results[0]).type.dtype));
  return j;
}

json totalsJson(const Graph& graph) {
  CompileTotals totals = compileTotals(graph);
  int inserted = 0;
  for (const auto& [type, n] : totals.insertedByType) inserted += n;
  return {{"comm_bytes_per_rank", totals.commBytesPerRank},
          {"param_bytes_per_rank", totals.paramBytesPerRank},
          {"inserted_ops", inserted},
          {"grad_comm_bytes_per_rank", totals.gradBytesPerRank}};
}

}  // namespace

void writeReport(std::ostream& out, const Graph& graph, const CompileOptions& options, int64_t rank, int indent) {
  JsonStream js(out, indent);
  js.beginObject();
  js.member("schema_version", 1);
  js.member("model", graph.name);
  js.member("device_num", options.deviceNum);
  js.member("global_rank", rank);
  js.member("search_mode", std::string(searchModeName(options.searchMode)));

  std::vector<std::vector<OpId>> forward(graph.ops.size());  // by owner
  for (OpId id : graph.order)
    if (graph.op(id).role == InsertedRole::ForwardOp) forward[graph.op(id).owner].push_back(id);
  js.key("ops");
  js.beginArray();
  for (OpId id : graph.order)
    if (!graph.op(id).inserted()) js.value(opJson(graph, graph.op(id), forward[id], rank));
  js.endArray();

  js.key("values");
  js.beginArray();
  for (const auto* list : {&graph.inputs, &graph.parameters})
    for (ValueId id : *list) js.value(valueJson(graph, id, graph.value(id).layout, nullptr));
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted()) continue;
    const OpParallelState& p = op.parallel;
    for (size_t r = 0; r < op.results.size(); ++r)
      js.value(valueJson(graph, op.results[r], p.layoutsInferred ? std::optional(p.finalLayouts[r]) : std::nullopt, &p.origin));
  }
  js.endArray();

  js.key("redistributions");
  js.beginArray();
  for (const RedistributionRecord& rec : graph.redistributions) js.value(redistributionJson(graph, rec, rank));
  js.endArray();

  js.key("mirror_ops");
  js.beginArray();
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() && op.step && op.step->kind == RedistStep::Kind::Mirror) js.value(mirrorJson(graph, id, rank));
  }
  js.endArray();

  js.key("totals");
  js.value(totalsJson(graph));
  js.endObject();
  out << '\n';
}

json buildReport(const Graph& graph, const CompileOptions& options, int64_t rank) {
  std::ostringstream text;
  writeReport(text, graph, options, rank, -1);
  return json::parse(text.str());
}

}  // namespace irc
