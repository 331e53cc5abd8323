#include "dumps/report.h"

#include <cmath>

#include "cost/stage_estimate.h"
#include "cost/routed_share.h"
#include "cost/step_cost.h"
#include "cost/step_schedule.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "dumps/ir_printer.h"
#include "dumps/json_stream.h"
#include "dumps/origin_text.h"
#include "ops/inserted_ops.h"
#include "ir/layout_notation.h"
#include "ops/collective.h"
#include "ops/op_defs.h"
#include "ops/op_family.h"
#include "cost/memory_estimate.h"
#include "ops/op_sharding.h"
#include "plan/device_precision.h"

namespace irc {
namespace {

using json = nlohmann::ordered_json;

// Micro-batches in flight: whole under 1F1B (written as an integer), a fraction with virtual
// stages (a chunk holds part of its stage).
json microBatchCount(double n) {
  if (n == std::floor(n)) return static_cast<int64_t>(n);
  return n;
}

// A searched op's runner-up strategies with what each would add to the step's estimated time.
void writeRunnersUp(JsonStream& js, const Graph& graph, OpId id) {
  if (!graph.search || id < 0 || id >= static_cast<OpId>(graph.search->classOf.size()) || graph.search->classOf[id] < 0) return;
  js.key("runners_up"_key);
  js.beginArray();
  for (const SearchAlternative& a : graph.search->classes[graph.search->classOf[id]].runnersUp) {
    js.beginObject();
    js.member("in_strategy"_key, formatStrategy(a.strategy));
    js.member("delta_seconds"_key, a.deltaSeconds);
    js.endObject();
  }
  js.endArray();
}

void writeOrigin(JsonStream& js, const Graph& graph, OpId id, const StrategyOrigin& o) {
  js.beginObject();
  switch (o.kind) {
    case OriginKind::User: js.member("kind"_key, std::string("user")); break;
    case OriginKind::Searched:
      js.member("kind"_key, std::string("searched"));
      js.member("seconds"_key, o.cost);
      writeRunnersUp(js, graph, id);
      break;
    case OriginKind::Default: js.member("kind"_key, std::string("default")); break;
    case OriginKind::Tensor: {
      js.member("kind"_key, std::string("tensor"));
      std::string from = originSourceName(graph, o);
      if (!from.empty()) js.member("from"_key, from);
      if (o.edge != StrategyOrigin::Edge::None) js.member("edge_cost"_key, o.cost);
      break;
    }
    case OriginKind::Propagated:
      js.member("kind"_key, std::string("propagated"));
      js.member("from"_key, originSourceName(graph, o));
      js.member("edge_cost"_key, o.cost);
      if (o.hasNextBest) {
        js.key("next_best"_key);
        js.beginObject();
        js.member("in_strategy"_key, formatStrategy(o.nextBest));
        js.member("edge_cost"_key, o.nextBestCost);
        js.endObject();
      }
      break;
  }
  js.endObject();
}

// An inserted op's members as the report lists it: type and attrs for the rank (bounds as lists),
// and why it was inserted. The attrs are written leaf by leaf (a redistributed 100k-op model has
// over 100k inserted ops): the op's own in key order, then the operands' bounds, shape or divisor.
void writeInsertedOpMembers(JsonStream& js, const Graph& graph, OpId id, int64_t rank) {
  const Op& op = graph.op(id);
  const OpForRank view(graph, op, rank);
  const AttrMap& attrs = view.attrs();
  const std::vector<Operand>& operands = view.operands();
  js.member("type"_key, op.type);
  js.key("attrs"_key);
  js.beginObject();
  for (const auto& [k, v] : attrs) {
    if (k == "group_ranks") js.member(k, stepGroup(*op.step, rank));  // the group as numbers, from the op's step
    else if (auto* i = std::get_if<int64_t>(&v)) js.member(k, *i);
    else if (auto* s = std::get_if<std::string>(&v)) js.member(k, *s);
    else if (auto* b = std::get_if<bool>(&v)) js.member(k, *b);
    else js.member(k, formatAttribute(v));
  }
  // (No inserted op has an attr of these names: each is a member of its own.)
  if (familyOf(op) == OpFamily::StridedSlice) {
    js.member("begin"_key, std::get<IntTuple>(*operands[1].constant));
    js.member("end"_key, std::get<IntTuple>(*operands[2].constant));
    js.member("strides"_key, std::get<IntTuple>(*operands[3].constant));
  }
  if (familyOf(op) == OpFamily::Reshape) js.member("shape"_key, std::get<IntTuple>(*operands[1].constant));
  if (op.step && isMeanDivision(*op.step)) js.member("divisor"_key, std::get<ScalarTensor>(*operands[1].constant).value);
  js.endObject();
  if (!op.reason.empty()) js.member("reason"_key, op.reason);
}

void writeInsertedOp(JsonStream& js, const Graph& graph, OpId id, int64_t rank) {
  js.beginObject();
  writeInsertedOpMembers(js, graph, id, rank);
  js.endObject();
}

double sendBytes(const Graph& graph, const Op& op) {
  if (!op.step || opTypeOfStep(*op.step) != op.type) return 0;
  return stepSendBytes(*op.step, byteSize(graph.value(op.results[0]).type.dtype));
}

}  // namespace

CompileTotals compileTotals(const Graph& graph, const CompileOptions* options, int64_t rank) {
  CompileTotals t;
  // The rank's stage, and the dtype a value moves and is held in.
  const int64_t stage = options && graph.stageDevices > 0 ? rank / graph.stageDevices : -1;
  auto bytesOf = [&](DType declared) { return byteSize(options ? computeDType(declared, options->precision) : declared); };
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (!op.inserted()) continue;
    ++t.insertedByType[op.type];
    if ((stage >= 0 && op.stage != stage) || op.results.empty() || !op.step) continue;
    const int dtypeBytes = bytesOf(graph.value(op.results[0]).type.dtype);
    if (opTypeOfStep(*op.step) == op.type) t.commBytesPerRank += stepSendBytes(*op.step, dtypeBytes);
    t.gradBytesPerRank += mirrorGradientBytes(*op.step, dtypeBytes);
  }
  // A parameter counts on the stage of its first reader (where it is held).
  std::vector<bool> counted(graph.values.size(), false);
  if (stage < 0)
    for (ValueId p : graph.parameters) {
      const Value& v = graph.value(p);
      Shape local = v.layout ? v.layout->sliceShape() : v.type.shape;
      t.paramBytesPerRank += static_cast<double>(numElements(local)) * bytesOf(v.type.dtype);
    }
  for (OpId id : graph.order) {
    if (stage < 0) break;
    const Op& op = graph.op(id);
    for (const Operand& o : op.operands) {
      if (!o.isValue()) continue;
      ValueId p = modelValueBehind(graph, o.value);
      const Value& v = graph.value(p);
      if (v.kind != ValueKind::Parameter || counted[p]) continue;
      counted[p] = true;
      if (op.stage != stage) continue;
      Shape local = v.layout ? v.layout->sliceShape() : v.type.shape;
      t.paramBytesPerRank += static_cast<double>(numElements(local)) * bytesOf(v.type.dtype);
    }
  }
  // Bytes are whole: a ring's (n - 1) / n of a tensor is a fraction of a byte apart from what
  // its steps move.
  t.commBytesPerRank = std::round(t.commBytesPerRank);
  t.gradBytesPerRank = std::round(t.gradBytesPerRank);
  return t;
}

namespace {

// The ops and values, the bulk of a report, are written leaf by leaf (no JSON objects built).

// A layout's members in the current object: dev_matrix (if asked), tensor_map, partial, and
// partial_op when partial.
void writeLayoutMembers(JsonStream& js, const TensorLayout& l, bool withDevMatrix) {
  if (withDevMatrix) js.member("dev_matrix"_key, l.mesh.dims);
  js.key("tensor_map"_key);
  js.beginArray();
  // TensorLayout::tensorMapEntries, written without building it (the report writes one per tensor).
  const int right = l.mesh.rank() - 1;
  for (const auto& axes : l.dims) {
    if (axes.empty()) {
      js.value(int64_t{-1});
    } else if (axes.size() == 1) {
      js.value(static_cast<int64_t>(right - axes[0]));
    } else {
      js.beginArray();
      for (int a : axes) js.value(static_cast<int64_t>(right - a));
      js.endArray();
    }
  }
  js.endArray();
  std::vector<int> partial = l.partialFromRight();
  js.member("partial"_key, std::vector<int64_t>(partial.begin(), partial.end()));
  if (l.isPartial()) js.member("partial_op"_key, std::string(reduceOpName(l.partialOp)));
  // DTensor's words for the same layout, for PyTorch users.
  js.key("placements"_key);
  if (auto placements = placementsOf(l)) {
    js.beginArray();
    for (const std::string& p : *placements) js.value(p);
    js.endArray();
  } else {
    js.value(nullptr);
  }
}

void writeValue(JsonStream& js, const Graph& graph, ValueId id, const TensorLayout* layout, const StrategyOrigin* origin) {
  const Value& v = graph.value(id);
  js.beginObject();
  js.member("name"_key, v.name);
  js.member("shape"_key, v.type.shape);
  js.member("dtype"_key, std::string(modelName(v.type.dtype)));
  if (layout) writeLayoutMembers(js, *layout, true);
  js.key("origin"_key);
  if (origin) {
    writeOrigin(js, graph, kNoId, *origin);
  } else {
    js.beginObject();
    js.member("kind"_key, std::string(v.sharding ? "tensor" : "default"));
    js.endObject();
  }
  js.endObject();
}

// One operand or result of an op: its global shape, layout and slice shape.
void writeTensorMembers(JsonStream& js, const TensorLayout& l) {
  js.member("shape"_key, l.shape);
  writeLayoutMembers(js, l, false);
  js.member("slice_shape"_key, l.sliceShape());
}

void writeStrategy(JsonStream& js, const ShardStrategy& strategy) {
  js.beginArray();
  for (const auto& tuple : strategy) js.intArray(tuple);
  js.endArray();
}

void writeOp(JsonStream& js, const Graph& graph, const Op& op, const std::vector<OpId>& forwardOps, int64_t rank) {
  const OpParallelState& p = *op.parallel;
  js.beginObject();
  js.member("name"_key, op.name);
  js.member("type"_key, op.type);
  if (const std::string& module = graph.moduleOf(op); !module.empty()) js.member("module"_key, module);
  if (graph.stageDevices > 0) js.member("stage"_key, op.stage);
  if (op.chunk > 0) js.member("chunk"_key, op.chunk);  // virtual stages: its stage's model chunk
  js.key("in_strategy"_key);
  if (takesLayoutsFromNeighbours(op) || !p.hasSharding) js.value(nullptr);
  else writeStrategy(js, strategyOf(op));
  if (const ShardStrategy* outStrategy = outStrategyOf(op)) {
    js.key("out_strategy"_key);
    writeStrategy(js, *outStrategy);
  }
  js.key("origin"_key);
  writeOrigin(js, graph, static_cast<OpId>(&op - graph.ops.data()), p.origin);
  if (p.layoutsInferred) {
    js.member("dev_matrix"_key, p.sharding.mesh.dims);
    js.key("inputs"_key);
    js.beginArray();
    int k = 0;
    for (const Operand& o : op.operands) {
      if (!o.isValue()) continue;
      js.beginObject();
      js.member("value"_key, graph.value(modelValueBehind(graph, o.value)).name);
      writeTensorMembers(js, p.inputLayouts[k++]);
      js.endObject();
    }
    js.endArray();
    js.key("outputs"_key);
    js.beginArray();
    for (const TensorLayout& l : p.outputLayouts) {
      js.beginObject();
      writeTensorMembers(js, l);
      js.endObject();
    }
    js.endArray();
  }
  js.key("forward_ops"_key);
  js.beginArray();
  for (OpId f : forwardOps) writeInsertedOp(js, graph, f, rank);
  js.endArray();
  js.endObject();
}

void writeRedistribution(JsonStream& js, const Graph& graph, const RedistributionRecord& rec, int64_t rank) {
  js.beginObject();
  js.member("value"_key, graph.value(rec.value).name);
  js.member("consumer"_key, rec.consumer);
  js.member("input_index"_key, int64_t{rec.inputIndex});
  for (const auto& [name, layout] : {std::pair{"from", &rec.from}, std::pair{"to", &rec.to}}) {
    js.key(name);
    js.beginObject();
    writeLayoutMembers(js, *layout, true);
    js.endObject();
  }
  js.member("reason"_key, rec.reason);
  js.key("ops"_key);
  js.beginArray();
  double bytes = 0;
  for (OpId id : rec.ops) {
    writeInsertedOp(js, graph, id, rank);
    bytes += sendBytes(graph, graph.op(id));
  }
  js.endArray();
  js.member("comm_bytes_per_rank"_key, bytes);
  js.endObject();
}

// A training graph's mirror: the gradient AllReduce it stands for.
void writeMirror(JsonStream& js, const Graph& graph, OpId id, int64_t rank) {
  const Op& op = graph.op(id);
  js.beginObject();
  writeInsertedOpMembers(js, graph, id, rank);
  js.member("name"_key, op.name);
  js.member("parameter"_key, graph.value(modelValueBehind(graph, op.operands[0].value)).name);
  js.member("grad_comm_bytes_per_rank"_key, mirrorGradientBytes(*op.step, byteSize(graph.value(op.results[0]).type.dtype)));
  js.endObject();
}

json clusterJson(const ClusterDescription& c, Precision precision) {
  json out = {{"preset", c.preset},
              {"precision", std::string(precisionName(precision))},
              {"devices_per_node", c.devicesPerNode},
              {"matmul_peak_flops", matmulPeak(c, precision)},
              {"hbm_bandwidth", c.device.hbmBandwidth},
              {"intra_node_bandwidth", c.intraNodeBandwidth},
              {"nic_bandwidth_per_device", c.nicBandwidthPerDevice()}};
  const PrecisionRecipe& recipe = recipeOf(precision);
  if (recipe.lowPrecision()) out["linear_product_peak_flops"] = productPeak(c, recipe.linear, precision);
  if (c.nvlinkDomain > 0) out["nvlink_domain"] = c.nvlinkDomain;
  return out;
}

// Every trainable weight, and the weights one token's forward pass multiplies with: all of
// them but a lookup table's other rows and the experts a token does not choose (K of E of a
// dispatch's experts' weights); a config.json's frontend gives its own count.
std::pair<int64_t, int64_t> parameterCounts(const Graph& graph, const ModelFacts& facts) {
  const std::vector<double> expertShare = activeParameterShares(graph);
  std::vector<int64_t> readRows(graph.values.size(), -1);  // a lookup table: the elements of one row
  for (const Op& op : graph.ops) {
    if (op.inserted()) continue;
    ModulePart part = rulesOf(op).modulePart(op);
    if (part.kind != ModulePart::Kind::Lookup || part.weight < 0) continue;
    ValueId table = op.operands[part.weight].value;
    const Shape& shape = graph.value(table).type.shape;
    if (!shape.empty() && shape[0] > 0) readRows[table] = numElements(shape) / shape[0];
  }
  int64_t all = 0, active = 0;
  for (ValueId v : graph.parameters) {
    const Value& value = graph.value(v);
    if (!value.trainable) continue;
    all += numElements(value.type.shape);
    active += readRows[v] >= 0 ? readRows[v] : std::llround(static_cast<double>(numElements(value.type.shape)) * expertShare[v]);
  }
  return {all, facts.activeParameters >= 0 ? facts.activeParameters : active};
}

json totalsJson(const Graph& graph, const CompileOptions& options, int64_t rank, const ModelFacts& facts) {
  CompileTotals totals = compileTotals(graph, &options, rank);
  auto [parameters, activeParameters] = parameterCounts(graph, facts);
  int inserted = 0;
  for (const auto& [type, n] : totals.insertedByType) inserted += n;
  json out = {{"comm_bytes_per_rank", totals.commBytesPerRank},
              {"param_bytes_per_rank", totals.paramBytesPerRank},
              {"inserted_ops", inserted},
              {"grad_comm_bytes_per_rank", totals.gradBytesPerRank},
              {"parameters", parameters},
              {"active_parameters", activeParameters}};
  if (std::all_of(graph.ops.begin(), graph.ops.end(),
                  [](const Op& op) { return op.inserted() || op.parallel->layoutsInferred; })) {
    StepTime t = estimateStepTime(graph, options);
    out["estimated_step_seconds"] = t.total();
    out["step_seconds_terms"] = {{"compute", t.compute},
                                 {"forward_comm", t.forwardComm},
                                 {"redistribution", t.redistribution},
                                 {"backward", t.backward},
                                 {"gradient_sync", t.gradientSync}};
    // On a cluster: the step as it runs (cost/step_schedule.h), and what it computes.
    if (auto e = estimateClusterStep(graph, options)) {
      out["estimated_step_seconds"] = e->total;
      out["step_seconds_terms"] = {{"compute", e->compute},
                                   {"exposed_communication", e->exposedCommunication},
                                   {"pipeline_bubble", e->pipelineBubble},
                                   {"optimizer", e->optimizer}};
      if (e->weightQuantization > 0) out["step_seconds_terms"]["weight_quantization"] = e->weightQuantization;
      json byCategory = json::object();
      for (const auto& [category, seconds] : e->timeByCategory) byCategory[category] = seconds;
      out["time_by_category"] = byCategory;
      out["model_flops"] = e->modelFlops;
      out["model_flops_every_point"] = e->modelFlopsEveryPoint;
      out["hardware_flops"] = e->hardwareFlops;
      out["tflops_per_device"] = e->tflopsPerDevice;
      out["mfu"] = e->mfu;
      out["gradient_sync_seconds"] = e->gradientSync;
      out["gradient_sync_exposed_seconds"] = e->gradientSyncExposed;
      out["cluster"] = clusterJson(*options.cluster, options.precision);
    }
  }
  return out;
}

// Pipeline stages: each stage's ranks, ops, estimated time and memory (1F1B), the transfers
// between them, and the bubble of the schedule.
json pipelineJson(const Graph& graph, const CompileOptions& options) {
  const int64_t stages = options.pipelineStages, micro = options.microBatches;
  std::vector<double> seconds = stageSeconds(graph, options);
  // On a cluster: a micro-batch's passes on each stage as the schedule runs them, and its bubble.
  const std::optional<ClusterStepEstimate> step = estimateClusterStep(graph, options);
  json list = json::array();
  for (int32_t s = 0; s < stages; ++s) {
    int count = 0;
    std::string first, last;
    for (OpId id : graph.order) {
      const Op& op = graph.op(id);
      if (op.inserted() || op.stage != s) continue;
      if (count++ == 0) first = op.name;
      last = op.name;
    }
    MemoryEstimate m = estimateStageMemory(graph, options, s);
    json stage = {{"stage", s},
                  {"ranks", {s * graph.stageDevices, (s + 1) * graph.stageDevices - 1}},
                  {"ops", count},
                  {"first_op", first},
                  {"last_op", last},
                  {"estimated_seconds", seconds[s]},
                  {"inference_peak_bytes", m.inference.peakBytes}};
    if (m.training) {
      stage["training_peak_bytes"] = m.training->peakBytes;
      stage["training_first_step_peak_bytes"] = m.training->firstStepPeakBytes;
      stage["in_flight_micro_batches"] = microBatchCount(m.training->inFlightMicroBatches);
      stage["saved_activations_bytes"] = m.training->savedActivationBytes;
    }
    if (step && s < static_cast<int32_t>(step->stages.size())) {
      const ClusterStepEstimate::Stage& st = step->stages[s];
      double weight = 0;
      for (double w : st.chunkWeight) weight += w;
      stage["forward_seconds"] = st.forward;
      stage["backward_input_seconds"] = st.backward - weight;
      stage["backward_weight_seconds"] = weight;
    }
    list.push_back(stage);
  }
  json transfers = json::array();
  for (const PipelineTransfer& t : graph.transfers)
    transfers.push_back({{"value", graph.value(t.value).name},
                         {"from_stage", t.fromStage},
                         {"to_stage", t.toStage},
                         {"sr_tag", t.tag},
                         {"bytes_per_rank", t.bytesPerRank}});
  size_t slowest = std::max_element(seconds.begin(), seconds.end()) - seconds.begin();
  json out = {{"stages", stages}};
  if (options.virtualStages > 1) out["virtual_stages"] = options.virtualStages;
  out["micro_batches"] = micro;
  out["schedule"] = std::string(pipelineScheduleName(options.schedule()));
  out["bubble_fraction"] = bubbleFraction(options);
  if (step) out["bubble_seconds"] = step->pipelineBubble;
  out["slowest_stage"] = slowest;
  out["stage_list"] = list;
  out["transfers"] = transfers;
  return out;
}

// search_mode auto's account: the objective and the solver's status, the memory against the
// budget, and the classes of ops that shared a choice. The solver's time is on stderr only: the
// report is byte-identical run to run.
json configurationJson(const SearchConfiguration& c) {
  json stages = json::array();
  for (int64_t n : c.stageLayers) stages.push_back(n);
  json out = json{{"dp", c.dims.dp},
                  {"tp", c.dims.tp},
                  {"pp", c.dims.pp},
                  {"cp", c.dims.cp},
                  {"sequence_parallel", c.dims.sp},
                  {"micro_batch_size", c.microBatchSize},
                  {"micro_batches", c.microBatches},
                  {"recompute", c.recompute},
                  {"optimizer_level", c.optimizerLevel},
                  {"zero_stage", c.zeroStage},
                  {"stages", stages},
                  {"estimated_step_seconds", c.stepSeconds},
                  {"tflops_per_device", c.tflopsPerDevice},
                  {"peak_bytes", c.peakBytes},
                  {"estimated_by", c.compiled ? "compile" : "layer_model"},
                  {"layer_model_step_seconds", c.layerModelSeconds},
                  {"verdict", c.verdict}};
  if (c.dims.v > 1) out["virtual_stages"] = c.dims.v;  // the interleaved schedule's
  if (!c.pipelineSchedule.empty()) out["pipeline_schedule"] = c.pipelineSchedule;
  if (c.dims.ep > 1) out["expert_parallel"] = c.dims.ep;
  if (c.dims.etp > 1) out["expert_tensor_parallel"] = c.dims.etp;
  return out;
}

json searchJson(const Graph& graph, const SearchSummary& s) {
  if (s.configuration) {
    const ConfigurationSearch& c = *s.configuration;
    json alternatives = json::array();
    for (const SearchConfiguration& a : c.alternatives) alternatives.push_back(configurationJson(a));
    json out{
        {"status", s.status},
        {"objective_seconds", s.objective},
        {"time_limit_seconds", s.timeLimit},
        {"memory_budget_bytes", s.memoryBudget},
        {"estimated_peak_bytes", s.estimatedPeak},
        {"configuration", configurationJson(c.chosen)},
        {"alternatives", alternatives},
        {"layers", c.layers},
        {"given", c.given},
        {"configurations_considered", c.considered},
        {"pruned_by_memory_bound", c.prunedByMemory},
        {"layer_models", c.probes},
        {"plans_compiled", c.compiledPlans},
        {"unexplored", {{"configurations_without_an_estimate", c.unestimated}, {"best_candidates_not_compiled", c.uncompiled}}}};
    if (!c.precisions.empty()) {
      // precision: auto: the recipe chosen, and each recipe's step (null where nothing fit).
      json tried = json::object();
      for (const auto& [name, seconds] : c.precisions) tried[name] = seconds > 0 ? json(seconds) : json(nullptr);
      out["precisions"] = tried;
      out["configuration"]["precision"] = c.precision;
    }
    return out;
  }
  json out = {
      {"objective_seconds", s.objective},  {"status", s.status},         {"gap", s.gap},   {"bound_seconds", s.bound},
      {"time_limit_seconds", s.timeLimit}, {"columns", s.columns},       {"rows", s.rows}, {"searched_ops", s.searchedOps},
      {"fixed_ops", s.fixedOps},           {"classes", s.classes.size()}};
  if (s.memoryBudget > 0) {
    out["memory_budget_bytes"] = s.memoryBudget;
    out["estimated_peak_bytes"] = s.estimatedPeak;
    out["memory_rounds"] = s.memoryRounds;
  }
  (void)graph;
  return out;
}

}  // namespace

void writeReport(std::ostream& out, const Graph& graph, const CompileOptions& options, int64_t rank, int indent,
                 const std::optional<MemoryEstimate>* given, const ModelFacts& facts) {
  JsonStream js(out, indent);
  js.beginObject();
  js.member("schema_version"_key, 1);
  js.member("model"_key, graph.name);
  js.member("device_num"_key, options.rankCount());
  js.member("global_rank"_key, rank);
  js.member("search_mode"_key, std::string(searchModeName(options.searchMode)));

  std::vector<std::vector<OpId>> forward(graph.ops.size());  // by owner
  for (OpId id : graph.order)
    if (graph.op(id).role == InsertedRole::ForwardOp) forward[graph.op(id).owner].push_back(id);
  js.key("ops"_key);
  js.beginArray();
  for (OpId id : graph.order)
    if (!graph.op(id).inserted()) writeOp(js, graph, graph.op(id), forward[id], rank);
  js.endArray();

  js.key("values"_key);
  js.beginArray();
  for (const auto* list : {&graph.inputs, &graph.parameters})
    for (ValueId id : *list) writeValue(js, graph, id, graph.value(id).layout ? &*graph.value(id).layout : nullptr, nullptr);
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted()) continue;
    const OpParallelState& p = *op.parallel;
    for (size_t r = 0; r < op.results.size(); ++r)
      writeValue(js, graph, op.results[r], p.layoutsInferred ? &*graph.value(op.results[r]).layout : nullptr, &p.origin);
  }
  js.endArray();

  js.key("redistributions"_key);
  js.beginArray();
  for (const RedistributionRecord& rec : graph.redistributions) writeRedistribution(js, graph, rec, rank);
  js.endArray();

  js.key("mirror_ops"_key);
  js.beginArray();
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() && op.step && isMirror(*op.step)) writeMirror(js, graph, id, rank);
  }
  js.endArray();

  js.key("totals"_key);
  js.value(totalsJson(graph, options, rank, facts));
  if (graph.search) {
    js.key("search"_key);
    js.value(searchJson(graph, *graph.search));
  }
  if (graph.stageDevices > 0) {
    js.key("pipeline"_key);
    js.value(pipelineJson(graph, options));
  }
  std::optional<MemoryEstimate> computed;
  if (!given) computed = memoryOf(graph, options, rank);
  if (const std::optional<MemoryEstimate>& memory = given ? *given : computed) {
    js.key("memory"_key);
    js.value(memoryJson(*memory, options));
  }
  js.endObject();
  out << '\n';
}

std::optional<MemoryEstimate> memoryOf(const Graph& graph, const CompileOptions& options, std::optional<int64_t> rank) {
  // Only a program whose every model op has its layouts (not a run stopped before them).
  for (const Op& op : graph.ops)
    if (!op.inserted() && !op.parallel->layoutsInferred) return std::nullopt;
  // A pipelined rank holds its stage's program only.
  if (graph.stageDevices > 0)
    return estimateStageMemory(graph, options, static_cast<int32_t>(rank.value_or(options.globalRank) / graph.stageDevices));
  return estimateMemory(graph, options);
}

json memoryJson(const MemoryEstimate& m, const CompileOptions& options) {
  json out;
  out["inference"] = {{"peak_bytes", m.inference.peakBytes},
                      {"peak_at", m.inference.peakAt},
                      {"parameters_bytes", m.inference.parameterBytes},
                      {"constants_bytes", m.inference.constantBytes},
                      {"activations_bytes", m.inference.activationBytes},
                      {"communication_bytes", m.inference.communicationBytes}};
  if (m.training)
    out["training"] = {{"peak_bytes", m.training->peakBytes},
                       {"peak_phase", m.training->peakPhase},
                       {"peak_at", m.training->peakAt},
                       {"first_step_peak_bytes", m.training->firstStepPeakBytes},
                       {"first_step_peak_phase", m.training->firstStepPeakPhase},
                       {"first_step_peak_at", m.training->firstStepPeakAt},
                       {"resident_bytes", m.training->residentBytes},
                       {"gradient_buffer", std::string(gradientBufferName(m.training->gradientBuffer))},
                       {"gradients_resident", m.training->gradientsResident},
                       {"optimizer", std::string(optimizerName(m.training->optimizer))},
                       {"optimizer_kernels", std::string(optimizerKernelsName(m.training->optimizerKernels))},
                       {"optimizer_temporaries_bytes", m.training->optimizerTemporaryBytes},
                       {"parameters_bytes", m.training->parameterBytes},
                       {"constants_bytes", m.training->constantBytes},
                       {"gradients_bytes", m.training->gradientBytes},
                       {"optimizer_states_bytes", m.training->optimizerStateBytes},
                       {"saved_activations_bytes", m.training->savedActivationBytes},
                       {"outputs_bytes", m.training->outputBytes},
                       {"recomputed_activations_bytes", m.training->recomputedActivationBytes},
                       {"recomputed_ops", m.training->recomputedOps}};
  if (m.training && options.precision != Precision::Fp32) {
    // Mixed precision: 16-bit weights and gradients, float32 master weights and moments.
    out["training"]["precision"] = std::string(precisionName(options.precision));
    out["training"]["master_weights_bytes"] = m.training->masterWeightBytes;
    if (recipeOf(options.precision).lowPrecision()) out["training"]["quantized_weights_bytes"] = m.training->quantizedWeightBytes;
  }
  if (m.training && options.pipelineStages > 1)
    out["training"]["in_flight_micro_batches"] = microBatchCount(m.training->inFlightMicroBatches);
  if (options.memoryBudget > 0) {
    double peak = m.training ? m.training->peakBytes : m.inference.peakBytes;
    out["budget_bytes"] = options.memoryBudget;
    out["over_budget"] = peak > options.memoryBudget;
  }
  // On a cluster: the device's visible memory, and whether the peak fits in it.
  if (options.cluster && options.cluster->device.hbmBytes > 0) {
    double peak = m.training ? m.training->peakBytes : m.inference.peakBytes;
    out["device_memory_bytes"] = options.cluster->device.hbmBytes;
    out["fits_device_memory"] = peak <= options.cluster->device.hbmBytes;
  }
  return out;
}

json buildReport(const Graph& graph, const CompileOptions& options, int64_t rank) {
  std::ostringstream text;
  writeReport(text, graph, options, rank, -1);
  return json::parse(text.str());
}

}  // namespace irc
