#include "passes/analysis/pipeline_split.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "ops/collective.h"
#include "ops/inserted_ops.h"
#include "ops/op_family.h"
#include "ops/op_inserter.h"
#include "ops/op_sharding.h"
#include "passes/plan/plan_queries.h"
#include "passes/analysis/memory_estimate.h"
#include "passes/analysis/step_cost.h"

namespace irc {
namespace {

// What one model op adds to its stage: its time (and its input edges', passes/analysis/step_cost.h), the
// bytes it holds for the whole step (its parameters, in training their gradients and optimizer
// states) and the bytes one micro-batch keeps for its backward.
struct OpLoad {
  double seconds = 0;
  double resident = 0;
  double savedPerMicroBatch = 0;
};

std::vector<OpLoad> loadsOf(const Graph& g, const CompileOptions& o) {
  std::vector<double> seconds = opStepSeconds(g, o);
  std::vector<OpLoad> loads(g.ops.size());
  std::vector<bool> read(g.values.size(), false);
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    if (op.inserted() || !op.parallel->layoutsInferred || !op.parallel->hasSharding || !op.parallel->rule) continue;
    OpLoad& load = loads[id];
    load.seconds = seconds[id];
    SavedForBackward saved = o.training ? rulesOf(op).savedForBackward(op) : SavedForBackward{};
    std::vector<int> kept = saved.operandsKeptWhenAllTrain();
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (!op.operands[i].isValue()) continue;
      ValueId v = op.operands[i].value;
      const Value& value = g.value(v);
      double bytes = sliceBytes(layoutNeeded(op, static_cast<int>(i)), value.type.dtype);
      bool param = value.kind == ValueKind::Parameter;
      if (param && isFloat(value.type.dtype) && !read[v])
        load.resident += value.trainable ? parameterStepBytes(bytes, value.type.dtype, o) : bytes;
      read[v] = true;
      if (!param && std::count(kept.begin(), kept.end(), static_cast<int>(i)) > 0) load.savedPerMicroBatch += bytes;
    }
    for (int r : saved.results)
      if (r < static_cast<int>(op.results.size()))
        load.savedPerMicroBatch += sliceBytes(op.parallel->outputLayouts[r], g.value(op.results[r]).type.dtype);
  }
  return loads;
}

// The cut of `ops` (in order) into at most P * v runs (virtual stages) each within `limit`
// seconds and the budget; returns each op's virtual stage, or empty when more runs are needed.
// With virtual stages the budget is checked per run, not per stage (a stage holds v runs): an
// approximation the compiled plan's memory estimate corrects.
std::vector<int32_t> greedyCut(const std::vector<OpId>& ops, const std::vector<OpLoad>& loads, double limit,
                               const CompileOptions& o) {
  const int64_t runs = o.pipelineStages * o.virtualStages;
  std::vector<int32_t> stage(ops.size(), 0);
  int32_t s = 0;
  double seconds = 0, resident = 0, saved = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpLoad& l = loads[ops[i]];
    auto fits = [&](int32_t at, double t, double r, double sv) {
      return t <= limit && (o.memoryBudget <= 0 || r + inFlightMicroBatches(at % o.pipelineStages, o) * sv <= o.memoryBudget);
    };
    if (i > 0 && !fits(s, seconds + l.seconds, resident + l.resident, saved + l.savedPerMicroBatch)) {
      ++s;
      seconds = resident = saved = 0;
      if (s >= runs) return {};
    }
    if (!fits(s, l.seconds, l.resident, l.savedPerMicroBatch) && seconds == 0) return {};
    seconds += l.seconds;
    resident += l.resident;
    saved += l.savedPerMicroBatch;
    stage[i] = s;
  }
  // Fewer runs than stages: split the last runs (a later stage holds fewer micro-batches, so
  // moving ops later keeps the memory within the budget and no stage gets slower).
  int32_t used = s + 1;
  for (size_t i = ops.size(); used < runs && i-- > 1;) {
    if (stage[i] != stage[i - 1]) continue;
    for (size_t j = i; j < ops.size(); ++j) ++stage[j];
    ++used;
  }
  if (used < runs) return {};
  return stage;
}

}  // namespace

double inFlightMicroBatches(int64_t stage, const ParallelSettings& s) {
  const int64_t P = s.pipelineStages, v = s.virtualStages;
  // GPipe runs every forward before the first backward: each stage holds them all.
  if (s.schedule() == PipelineSchedule::Gpipe) return static_cast<double>(s.microBatches);
  // ZB-H1 lets every stage hold what 1F1B's first does: P micro-batches whose weight gradient is due.
  if (s.schedule() == PipelineSchedule::ZeroBubble) return static_cast<double>(std::min(P, s.microBatches));
  if (v <= 1) return static_cast<double>(std::min(P - stage, s.microBatches));
  // Megatron's interleaved 1F1B: rank s warms up with (P - s - 1) * 2 + (v - 1) * P chunk
  // micro-batches, then holds one more in its steady state, of M * v in all; a chunk holds a
  // v-th of the stage's layers (stage 0: P + (P - 1) / v, Korthikanti et al. 2022, §4.2.3).
  const int64_t chunks = std::min((P - stage - 1) * 2 + (v - 1) * P + 1, s.microBatches * v);
  return static_cast<double>(chunks) / static_cast<double>(v);
}

void assignAutoStages(Graph& graph, const CompileOptions& options) {
  std::vector<OpLoad> loads = loadsOf(graph, options);
  std::vector<OpId> ops;
  double total = 0, largest = 0;
  for (OpId id : graph.order)
    if (!graph.op(id).inserted()) {
      ops.push_back(id);
      total += loads[id].seconds;
      largest = std::max(largest, loads[id].seconds);
    }
  // The smallest limit on the slowest stage for which the greedy cut fits: bisection between the
  // largest op and the whole step.
  double lo = largest, hi = std::max(total, largest);
  std::vector<int32_t> best = greedyCut(ops, loads, hi, options);
  if (best.empty()) {
    // The budget does not fit with any balance: cut by time alone (the report shows the memory).
    CompileOptions free = options;
    free.memoryBudget = 0;
    best = greedyCut(ops, loads, hi, free);
  } else {
    for (int i = 0; i < 100 && hi - lo > 1e-12 * std::max(hi, 1e-300); ++i) {
      double mid = (lo + hi) / 2;
      std::vector<int32_t> cut = greedyCut(ops, loads, mid, options);
      if (cut.empty()) lo = mid;
      else {
        hi = mid;
        best = std::move(cut);
      }
    }
  }
  for (size_t i = 0; i < ops.size() && !best.empty(); ++i) {
    graph.op(ops[i]).stage = static_cast<int32_t>(best[i] % options.pipelineStages);
    graph.op(ops[i]).chunk = static_cast<int32_t>(best[i] / options.pipelineStages);
  }
}

void insertPipelineTransfers(Graph& graph, const CompileOptions& options) {
  const int64_t stages = options.pipelineStages;
  OpInserter ins(graph);
  std::map<std::pair<ValueId, int32_t>, ValueId> received;  // (value, stage) -> its Receive's result
  std::map<std::pair<int32_t, int32_t>, int64_t> tags;      // per (from, to) stage pair with a Send: Sends so far
  std::vector<OpId> order = graph.order;
  graph.transfers.clear();
  graph.stageDevices = options.deviceNum;
  for (OpId id : order) {
    int32_t stage = graph.op(id).stage;
    for (size_t i = 0; i < graph.op(id).operands.size(); ++i) {
      const Operand o = graph.op(id).operands[i];
      if (!o.isValue()) continue;
      ValueId v = o.value;
      OpId producer = graph.value(v).producer;
      // A value crosses to another stage's ranks where a later virtual stage reads it (with
      // virtual stages, from the last stage back to the first too).
      if (producer == kNoId || virtualStageOf(graph.op(producer), stages) >= virtualStageOf(graph.op(id), stages) ||
          graph.op(producer).stage == stage)
        continue;
      auto key = std::make_pair(v, stage);
      auto it = received.find(key);
      if (it == received.end()) {
        int32_t from = graph.op(producer).stage;
        // A copy: adding the ops below may move the graph's ops and values.
        TensorLayout layout = layoutOfValue(graph, v);
        TensorType type = graph.value(v).type;
        TransferSteps steps =
            transferSteps(stages, options.deviceNum, from, stage, layout.sliceShape(), type.shape, tags[{from, stage}]++);
        AttrMap attrs{{"dtype", std::string(dumpName(type.dtype))}};
        std::string valueName = graph.value(v).name;
        ins.setOwner(producer, InsertedRole::Transfer);
        std::string name = fmt::format("{}.send.{}", valueName, stage);
        ValueId sent = ins.add(name, fmt::format("send_{}_{}", valueName, stage), std::string(opTypeOfStep(steps.send)),
                               {Operand::ofValue(v)}, attrs, {type}, std::make_shared<const RedistStep>(steps.send),
                               fmt::format("'{}' of stage {} is read by '{}' in stage {}: its ranks send their slices", valueName,
                                           from, graph.op(id).name, stage));
        OpId send = graph.value(sent).producer;
        ins.setOwner(graph.op(id).inserted() ? graph.op(id).owner : id, InsertedRole::Transfer);
        ValueId got =
            ins.add(fmt::format("{}.receive.{}", valueName, stage), fmt::format("receive_{}_{}", valueName, stage),
                    std::string(opTypeOfStep(steps.receive)), {Operand::ofValue(sent)}, attrs, {type},
                    std::make_shared<const RedistStep>(steps.receive),
                    fmt::format("stage {} receives '{}' from the rank at its position in stage {}", stage, valueName, from));
        graph.transfers.push_back(
            {send, graph.value(got).producer, v, from, stage, steps.send.srTag, sliceBytes(layout, type.dtype)});
        it = received.emplace(key, got).first;
      }
      graph.op(id).operands[i] = Operand::ofValue(it->second);
    }
    ins.order.push_back(id);
  }
  graph.order = std::move(ins.order);
}

// A pipelined rank runs its stage's ops: they alone stay in its order, with the inputs and
// parameters they read; a Receive gets its data from the other stage, not from its Send; the
// stage returns what leaves it (its Sends) unless it computes graph outputs.
void keepPipelineStage(Graph& graph, int32_t stage) {
  graph.stage = stage;
  std::vector<OpId> kept;
  std::vector<bool> read(graph.values.size(), false);
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    if (op.stage != stage) continue;
    // A stage's Receive reads no value of this stage: its Send's result is another stage's.
    if (op.step && isReceive(*op.step)) op.operands.clear();
    for (const Operand& o : op.operands)
      if (o.isValue()) read[o.value] = true;
    kept.push_back(id);
  }
  graph.order = std::move(kept);
  std::vector<bool> produced(graph.values.size(), false);
  std::vector<ValueId> sends;
  for (OpId id : graph.order) {
    for (ValueId r : graph.op(id).results) produced[r] = true;
    if (graph.op(id).step && isSend(*graph.op(id).step)) sends.push_back(graph.op(id).results[0]);
  }
  for (auto* list : {&graph.inputs, &graph.parameters})
    list->erase(std::remove_if(list->begin(), list->end(), [&](ValueId v) { return !read[v]; }), list->end());
  std::vector<ValueId> outputs;
  for (ValueId v : graph.outputs)
    if (produced[v] || (graph.value(v).producer == kNoId && read[v])) outputs.push_back(v);
  graph.outputs = outputs.empty() ? sends : outputs;
}

MemoryEstimate estimateStageMemory(const Graph& graph, const ParallelSettings& settings, int32_t stage) {
  Graph view = graph;
  keepPipelineStage(view, stage);
  // What the stage sends on gets its gradient back even where it also computes graph outputs
  // (the last stage's earlier chunks under virtual stages): the walk's backward starts there too.
  std::vector<bool> output(view.values.size(), false);
  for (ValueId v : view.outputs) output[v] = true;
  for (OpId id : view.order) {
    const Op& op = view.op(id);
    if (op.step && isSend(*op.step) && !output[op.results[0]])
      view.outputs.push_back(op.results[0]), output[op.results[0]] = true;
  }
  // 1F1B: while stage s runs forward and backward it holds the saved activations of
  // min(P - s, M) micro-batches; the optimizer's update comes after the last one.
  return estimateMemory(view, settings, StepPlace{stage == settings.pipelineStages - 1, inFlightMicroBatches(stage, settings)});
}

RankPeaks fullestRankPeaks(const Graph& graph, const ParallelSettings& settings) {
  RankPeaks peaks;
  auto take = [&](const MemoryEstimate& m) {
    peaks.steady = std::max(peaks.steady, m.training ? m.training->peakBytes : m.inference.peakBytes);
    peaks.firstStep = std::max(peaks.firstStep, m.training ? m.training->firstStepPeakBytes : m.inference.peakBytes);
  };
  if (graph.stageDevices == 0) take(estimateMemory(graph, settings));
  else
    for (int32_t s = 0; s < settings.pipelineStages; ++s) take(estimateStageMemory(graph, settings, s));
  return peaks;
}

namespace {

// The first all-digit part of a module path (`model.layers.3.mlp` -> 3); -1 without one.
int64_t layerOf(const std::string& module) {
  size_t start = 0;
  while (start < module.size()) {
    size_t end = module.find('.', start);
    if (end == std::string::npos) end = module.size();
    if (end > start && std::all_of(module.begin() + start, module.begin() + end, [](char c) { return c >= '0' && c <= '9'; }))
      return std::stoll(module.substr(start, std::min<size_t>(end - start, 18)));
    start = end + 1;
  }
  return -1;
}

}  // namespace

std::optional<std::string> applyRecomputeLayers(Graph& graph, const ParallelSettings& settings) {
  const int64_t P = std::max<int64_t>(1, settings.pipelineStages);
  if (settings.recomputeLayers.empty()) return std::nullopt;
  std::vector<std::vector<int64_t>> layers(P);  // each stage's layers, in order
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    const int64_t layer = op.inserted() ? -1 : layerOf(graph.moduleOf(op));
    if (layer < 0) continue;
    auto& mine = layers[std::clamp<int64_t>(op.stage, 0, P - 1)];
    if (std::find(mine.begin(), mine.end(), layer) == mine.end()) mine.push_back(layer);
  }
  std::vector<std::vector<bool>> recomputed(P);
  for (int64_t s = 0; s < P; ++s) {
    const int64_t count = settings.recomputeLayers[static_cast<size_t>(s) % settings.recomputeLayers.size()];
    std::sort(layers[s].begin(), layers[s].end());
    if (count > static_cast<int64_t>(layers[s].size()))
      return fmt::format(
          "recompute_layers asks stage {} for {} layer{}; it has {} (an op's layer is the number in its module "
          "path, model.layers.N)",
          s, count, count == 1 ? "" : "s", layers[s].size());
    layers[s].resize(static_cast<size_t>(count));
  }
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    const int64_t layer = op.inserted() ? -1 : layerOf(graph.moduleOf(op));
    const auto& chosen = layers[std::clamp<int64_t>(op.stage, 0, P - 1)];
    if (layer >= 0 && std::find(chosen.begin(), chosen.end(), layer) != chosen.end()) op.annotation->recompute = true;
  }
  return std::nullopt;
}

std::vector<double> stageSeconds(const Graph& graph, const ParallelSettings& settings) {
  std::vector<double> out(settings.pipelineStages, 0), seconds = opStepSeconds(graph, settings);
  for (OpId id : graph.order)
    if (!graph.op(id).inserted()) out[graph.op(id).stage] += seconds[id];
  return out;
}

}  // namespace irc
