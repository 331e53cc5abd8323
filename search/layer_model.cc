#include "passes/manager/pass_manager.h"
#include "search/layer_model.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "ir/cluster.h"
#include "ir/tensor_layout.h"
#include "cost/attention_fusion.h"
#include "ops/batch_split.h"
#include "ops/inserted_ops.h"
#include "plan/plan_queries.h"
#include "cost/memory_estimate.h"
#include "cost/step_cost.h"
#include "search/tensor_parallel_seeds.h"

namespace irc {

std::optional<int64_t> layerIndexOf(const Graph& graph, const Op& op) {
  const std::string& module = graph.moduleOf(op);
  const std::string& name = module.empty() ? op.name : module;
  for (size_t i = 0; i < name.size();) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
    // A module path may end at the layer itself (`model.layers.3`: the decoder layer's own ops,
    // its residual adds).
    bool closes = j < name.size() ? name[j] == '.' || name[j] == '/' || name[j] == '_' : !module.empty() && name[i - 1] == '.';
    if (i > 0 && closes && j - i < 9) return std::stoll(name.substr(i, j - i));
    i = j;
  }
  return std::nullopt;
}

LayerMap findLayers(const Graph& graph) {
  LayerMap m;
  m.slot.assign(graph.ops.size(), -1);
  std::map<int64_t, int32_t> ordinal;
  std::vector<std::optional<int64_t>> index(graph.ops.size());
  for (OpId id : graph.order)
    if (!graph.op(id).inserted() && (index[id] = layerIndexOf(graph, graph.op(id)))) ordinal.emplace(*index[id], 0);
  int32_t k = 0;
  for (auto& [_, o] : ordinal) o = k++;
  m.count = k;
  bool seenLayer = false;
  // An op outside the layers is before them until the first layer's op, after them once the
  // last layer has begun.
  int32_t lastLayer = k - 1;
  bool inLast = false;
  for (OpId id : graph.order) {
    if (graph.op(id).inserted()) continue;
    if (index[id]) {
      m.slot[id] = ordinal[*index[id]];
      seenLayer = true;
      inLast = m.slot[id] == lastLayer;
    } else {
      m.slot[id] = !seenLayer ? m.pre() : inLast ? m.post() : m.pre();
    }
  }
  return m;
}

const char* recomputeName(Recompute r) {
  return r == Recompute::None ? "none" : r == Recompute::Selective ? "selective" : "full";
}

void markRecompute(Graph& graph, const LayerMap& layers, Recompute r, const std::vector<bool>& attention,
                   const std::vector<bool>* layerMask) {
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    if (op.inserted() || op.annotation->recompute) continue;
    int32_t slot = layers.slot[id];
    if (slot < 0 || slot >= layers.count) continue;
    if (layerMask && !(*layerMask)[slot]) continue;
    bool chosen = r == Recompute::Full;
    if (r == Recompute::Selective)
      for (ValueId v : op.results) chosen = chosen || attention[v];
    if (!chosen) continue;
    op.annotation->recompute = true;
    op.annotation->checkpoint = slot + 1;  // one checkpoint per layer
  }
}

void clearRecompute(Graph& graph) {
  for (Op& op : graph.ops)
    if (!op.inserted() && std::as_const(op).annotation->recompute) {
      op.annotation->recompute = false;
      op.annotation->checkpoint = 0;
    }
}

CompileOptions searchCompileOptions(const CompileOptions& base, int64_t devices) {
  CompileOptions o = base;
  o.deviceNum = devices;
  o.pipelineStages = 1;
  o.microBatches = 1;
  o.autoStages = false;
  o.searchMode = SearchMode::ShardingPropagation;
  o.fullyUseDevices = false;
  o.parallelOptimizerLevel = 0;
  o.memoryBudget = 0;
  o.stopAfter = "redistribution";
  o.passes.clear();
  o.ranks.clear();
  o.globalRank = 0;
  return o;
}

namespace {

// Each slot's seconds (forward, backward, weight gradient, casts, communication; the selective
// recompute's share), trained elements, gradients and the model's FLOPs, from the compiled copy.
void addOpTimes(const Graph& g, const CompileOptions& o, const LayerMap& layers, const std::vector<bool>& attention, int64_t ep,
                LayerModel& m) {
  const size_t slots = static_cast<size_t>(layers.count + 2);
  m.compute.assign(slots, 0), m.comm.assign(slots, 0), m.recomputeSelective.assign(slots, 0), m.commSelective.assign(slots, 0);
  m.trained.assign(slots, 0), m.backward.assign(slots, 0), m.weightCasts.assign(slots, 0), m.weightGradient.assign(slots, 0);
  m.gradientElements.assign(slots, {});
  forEachOpTime(g, o, [&](const Op& op, const StepTime& t) {
    OpId id = static_cast<OpId>(&op - g.ops.data());
    int32_t slot = id < static_cast<OpId>(layers.slot.size()) ? layers.slot[id] : -1;
    if (slot < 0) return;
    double comm = t.forwardComm + t.redistribution;
    m.compute[slot] += t.compute;
    m.backward[slot] += t.backwardCompute;
    m.weightGradient[slot] += weightGradientSeconds(g, op, t);
    m.weightCasts[slot] += t.perStepCompute;
    m.comm[slot] += comm;
    bool selective = false;
    for (ValueId v : op.results) selective = selective || (v < static_cast<ValueId>(attention.size()) && attention[v]);
    if (selective) {
      m.recomputeSelective[slot] += t.compute;
      m.commSelective[slot] += comm;
    }
    m.trained[slot] += t.trainedElements;
    for (const GradientShare& share : t.gradients) m.gradientElements[slot][share.span.ranks] += share.bytes / share.elementBytes;
    m.flops += t.globalFlops / static_cast<double>(ep);
  });
}

// The parameters optimizer parallel may shard, by the slot of each reader.
void addOptimizerShards(const Graph& g, const CompileOptions& base, const LayerMap& layers, LayerModel& m) {
  m.optimizerShards.assign(static_cast<size_t>(layers.count + 2), {});
  std::vector<bool> seen(g.values.size(), false);
  std::map<ValueId, LayerModel::OptimizerShard> held;
  for (OpId id : g.order) {
    if (id >= static_cast<OpId>(layers.slot.size()) || layers.slot[id] < 0) continue;
    const Op& op = g.op(id);
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].isValue()) continue;
      ValueId behind = modelValueBehind(g, op.operands[i].value);  // behind its casts and conversions
      const bool first = !seen[behind];
      seen[behind] = true;
      const Value& v = g.value(behind);
      if (v.kind != ValueKind::Parameter || !v.trainable || !isFloat(v.type.dtype) || v.type.shape.empty()) continue;
      double bytes = static_cast<double>(numElements(v.type.shape)) * byteSize(v.type.dtype);
      if (bytes < base.parallelOptimizerThresholdKiB * 1024) continue;
      // The ranks holding the same slice: the mesh's axes the slice its reader needs leaves out.
      const TensorLayout& need = layoutNeeded(op, static_cast<int>(i));
      std::vector<int> used = need.usedAxes();
      int64_t replicas = 1;
      for (int a = 0; a < need.mesh.rank(); ++a)
        if (std::find(used.begin(), used.end(), a) == used.end()) replicas *= need.mesh.dims[a];
      std::vector<int64_t> slice = need.sliceShape();
      // A later reader converts from the held shard (its first reader's slice split over that
      // reader's replicas): gathered whole, then sliced to its need.
      LayerModel::OptimizerShard shard{replicas, static_cast<double>(numElements(slice)), slice[0], first};
      if (first) held[behind] = shard;
      else if (auto it = held.find(behind); it != held.end()) shard = it->second, shard.firstReader = false;
      m.optimizerShards[layers.slot[id]].push_back(shard);
    }
  }
}

// What a stage boundary sends: the values layer 1 reads from layer 0 or from before the layers,
// at their local slices.
void addBoundaryMessages(const Graph& g, const CompileOptions& base, const LayerMap& layers, LayerModel& m) {
  std::vector<bool> counted(g.values.size(), false);
  for (OpId id : g.order) {
    if (id >= static_cast<OpId>(layers.slot.size()) || layers.slot[id] != 1) continue;
    for (const Operand& o : g.op(id).operands) {
      if (!o.isValue() || counted[o.value]) continue;
      const Value& v = g.value(o.value);
      if (v.producer == kNoId || v.producer >= static_cast<OpId>(layers.slot.size()) || !v.layout) continue;
      if (int32_t from = layers.slot[v.producer]; from != 0 && from != layers.pre()) continue;
      counted[o.value] = true;
      m.boundaryMessages.push_back(sliceBytes(*v.layout, computeDType(v.type.dtype, base.precision)));
    }
  }
}

// A layer's saved activations and the transient peak under each recompute choice; false when
// the copy has no training memory.
bool addLayerMemory(Graph& g, const CompileOptions& o, const LayerMap& layers, const std::vector<bool>& attention,
                    LayerModel& m) {
  for (Recompute r : kRecomputes) {
    clearRecompute(g);
    markRecompute(g, layers, r, attention);
    MemoryEstimate e = estimateMemory(g, o);
    if (!e.training) return false;
    const TrainingMemory& t = *e.training;
    double resident = t.parameterBytes + t.gradientBytes + t.optimizerStateBytes + t.masterWeightBytes + t.constantBytes +
                      t.quantizedWeightBytes;
    double trained = 0;
    for (double e : m.trained) trained += e;
    m.quantizedWeightsPerTrained = trained > 0 ? t.quantizedWeightBytes / trained : 0;
    m.savedPerLayer[static_cast<int>(r)] = t.savedActivationBytes / static_cast<double>(layers.count);
    m.transient[static_cast<int>(r)] = std::max(0.0, t.peakBytes - resident - t.savedActivationBytes);
  }
  return true;
}

}  // namespace

std::optional<LayerModel> buildLayerModel(const Graph& graph, const CompileOptions& base, const LayerMap& layers,
                                          const ParallelDims& group, int64_t mbs, std::vector<bool>& attention,
                                          const TrialCompile& compile) {
  const int64_t tp = group.tp, ep = group.ep, cp = group.cp;
  Graph g = graph;
  // A tensor-parallel size or micro-batch the shapes do not divide has no model.
  if (splitBatch(g, mbs * ep) || seedTensorParallel(g, group)) return std::nullopt;
  CompileOptions o = searchCompileOptions(base, tp * ep * cp);
  o.enableAlltoall = o.enableAlltoall || ep > 1;  // the tokens to their experts and back
  DiagnosticEngine quiet("search", "");
  PassContext context{quiet};
  if (compile(g, o, context) != RunOutcome::Ok) return std::nullopt;
  // The scores and probabilities of attention (what selective recompute does not keep): the
  // chains a fused kernel would keep on chip, found on the first compiled model.
  if (attention.empty()) {
    attention = fusedAttentionValues(g);
    attention.resize(graph.values.size());
  }
  LayerModel m;
  addOpTimes(g, o, layers, attention, ep, m);
  addOptimizerShards(g, base, layers, m);
  addBoundaryMessages(g, base, layers, m);
  if (!addLayerMemory(g, o, layers, attention, m)) return std::nullopt;
  return m;
}

}  // namespace irc
