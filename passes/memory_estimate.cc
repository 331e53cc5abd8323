#include "passes/memory_estimate.h"

#include <algorithm>
#include <utility>

#include "ir/inserted_ops.h"
#include "ops/op_defs.h"
#include "ops/op_family.h"
#include "ops/shape_inference.h"

namespace irc {
namespace {

// Constant: what a model holds but does not train (an ONNX export's buffers and folded masks).
enum class Holder { Parameter, Activation, Communication, Constant };

// The rank's program as memory sees it: every value's local bytes, the value whose memory it
// uses (a view uses its operand's), and when that memory is last read.
struct Program {
  std::vector<double> bytes;       // per value: its own memory (0 for a view)
  std::vector<ValueId> root;       // per value: whose memory it is
  std::vector<int> lastUse;        // per root: the last position reading it or a view of it
  std::vector<Holder> holder;      // per value
  std::vector<bool> floating;      // per value: a floating dtype
  std::vector<bool> needsGradient; // per value: trainable, or computed from a trainable value (torch's requires_grad)
  std::vector<DType> dtype;
  int end = 0;                     // positions are 0 .. end - 1
};


// Each value at its local slice shape: inputs and parameters from their layouts, a model op's
// results from the layouts it computes, an inserted op's from its own shape rule on local
// operands, with `rank`'s bounds and group sizes.
std::vector<Shape> localShapes(const Graph& g, int64_t rank) {
  std::vector<Shape> local(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) local[v] = g.values[v].type.shape;
  for (const auto* list : {&g.inputs, &g.parameters})
    for (ValueId id : *list)
      if (g.value(id).layout) local[id] = g.value(id).layout->sliceShape();
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    if (!op.inserted() && op.parallel->layoutsInferred) {
      for (size_t r = 0; r < op.results.size() && r < op.parallel->outputLayouts.size(); ++r)
        local[op.results[r]] = op.parallel->outputLayouts[r].sliceShape();
      continue;
    }
    if (!op.inserted()) continue;
    std::vector<TensorType> types;
    std::vector<const TensorType*> operandTypes;
    types.reserve(op.operands.size());
    for (const Operand& o : op.operands) {
      types.push_back(o.isValue() ? TensorType{g.value(o.value).type.dtype, local[o.value]} : TensorType{});
      operandTypes.push_back(o.isValue() ? &types.back() : nullptr);
    }
    InferResult r = inferOnOperandTypes(OpForRank(g, op, rank), operandTypes);
    if (auto* t = std::get_if<std::vector<TensorType>>(&r))
      for (size_t i = 0; i < t->size() && i < op.results.size(); ++i) local[op.results[i]] = (*t)[i].shape;
  }
  return local;
}

// `precision`: a floating value is held in its compute dtype (16-bit in the mixed modes).
Program programOf(const Graph& g, int64_t rank, Precision precision) {
  Program p;
  size_t n = g.values.size();
  std::vector<Shape> local = localShapes(g, rank);
  p.bytes.resize(n);
  p.root.resize(n);
  p.holder.assign(n, Holder::Activation);
  p.floating.resize(n);
  p.dtype.resize(n);
  for (size_t v = 0; v < n; ++v) {
    p.root[v] = static_cast<ValueId>(v);
    p.dtype[v] = computeDType(g.values[v].type.dtype, precision);
    p.floating[v] = isFloat(p.dtype[v]);
    p.bytes[v] = static_cast<double>(numElements(local[v])) * byteSize(p.dtype[v]);
  }
  p.needsGradient.assign(n, false);
  for (ValueId v : g.parameters) {
    p.holder[v] = g.value(v).trainable ? Holder::Parameter : Holder::Constant;
    p.needsGradient[v] = g.value(v).trainable && p.floating[v];
  }
  p.end = static_cast<int>(g.order.size());
  p.lastUse.assign(n, -1);
  std::vector<int> readers(n, 0);
  for (OpId id : g.order)
    for (const Operand& o : g.op(id).operands)
      if (o.isValue()) ++readers[o.value];
  for (ValueId v : g.outputs) ++readers[v];
  for (int pos = 0; pos < p.end; ++pos) {
    const Op& op = g.op(g.order[pos]);
    // A view (and a training graph's identity mirror) shares its operand's memory, and so does
    // a bias added into the product it alone reads (torch's addmm).
    int shared = (op.inserted() && op.role == InsertedRole::Mirror) || (!op.inserted() && rulesOf(op).resultIsView(g, op)) ? 0 : -1;
    if (shared < 0 && !op.inserted()) {
      int into = rulesOf(op).accumulatesInto(g, op);
      if (into >= 0 && readers[op.operands[into].value] == 1 && p.bytes[op.operands[into].value] == p.bytes[op.results[0]]) shared = into;
    }
    for (ValueId r : op.results) {
      if (op.inserted() && op.role != InsertedRole::ReplaceGraph) p.holder[r] = Holder::Communication;
      if (shared >= 0 && static_cast<size_t>(shared) < op.operands.size() && op.operands[shared].isValue()) {
        p.root[r] = p.root[op.operands[shared].value];
        p.bytes[r] = 0;
      }
      p.lastUse[p.root[r]] = std::max(p.lastUse[p.root[r]], pos);
    }
    bool fromTrainable = false;
    for (const Operand& o : op.operands)
      if (o.isValue()) {
        p.lastUse[p.root[o.value]] = std::max(p.lastUse[p.root[o.value]], pos);
        fromTrainable = fromTrainable || p.needsGradient[o.value];
      }
    for (ValueId r : op.results) p.needsGradient[r] = fromTrainable && p.floating[r];
  }
  for (ValueId v : g.outputs) p.lastUse[p.root[v]] = p.end;
  return p;
}

bool resident(const Program& p, ValueId v) { return p.holder[v] == Holder::Parameter || p.holder[v] == Holder::Constant; }

// Live bytes by holder during a walk.
struct Live {
  double byHolder[4] = {0, 0, 0, 0};
  double total() const { return byHolder[0] + byHolder[1] + byHolder[2] + byHolder[3]; }
};

// The forward walk: allocates results, frees each root after its last reader unless `keep`
// says it stays (saved for backward). Calls `atOp(pos, live)` once each op's results exist.
template <typename AtOp>
Live forwardWalk(const Graph& g, const Program& p, const std::vector<bool>& keep, AtOp atOp) {
  Live live;
  std::vector<bool> held(g.values.size(), false);
  auto hold = [&](ValueId v) {
    if (held[v] || p.bytes[v] == 0) return;
    held[v] = true;
    live.byHolder[static_cast<int>(p.holder[v])] += p.bytes[v];
  };
  auto release = [&](ValueId v, int pos) {
    if (!held[v] || p.lastUse[v] != pos || resident(p, v) || keep[v]) return;
    held[v] = false;
    live.byHolder[static_cast<int>(p.holder[v])] -= p.bytes[v];
  };
  for (ValueId v : g.parameters) hold(v);
  for (ValueId v : g.inputs) hold(v);
  for (int pos = 0; pos < p.end; ++pos) {
    const Op& op = g.op(g.order[pos]);
    for (ValueId r : op.results) hold(r);
    atOp(pos, live);
    for (const Operand& o : op.operands)
      if (o.isValue()) release(p.root[o.value], pos);
    for (ValueId r : op.results) release(p.root[r], pos);
  }
  return live;
}

InferenceMemory inference(const Graph& g, const Program& p) {
  InferenceMemory m;
  m.liveAtOp.reserve(p.end);
  forwardWalk(g, p, std::vector<bool>(g.values.size(), false), [&](int pos, const Live& live) {
    m.liveAtOp.push_back(live.total());
    if (live.total() <= m.peakBytes) return;
    m.peakBytes = live.total();
    m.peakAt = g.op(g.order[pos]).name;
    m.parameterBytes = live.byHolder[static_cast<int>(Holder::Parameter)];
    m.activationBytes = live.byHolder[static_cast<int>(Holder::Activation)];
    m.communicationBytes = live.byHolder[static_cast<int>(Holder::Communication)];
    m.constantBytes = live.byHolder[static_cast<int>(Holder::Constant)];
  });
  return m;
}

// Optimizer parallel: each sharded parameter (root) with the root of its gathered copy, which
// its mirror reads.
std::vector<ValueId> gatheredCopies(const Graph& g, const Program& p) {
  std::vector<ValueId> gathered(g.values.size(), kNoId);
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    if (op.role != InsertedRole::Mirror || !op.step || !op.step->shardedGradient || !op.operands[0].isValue()) continue;
    gathered[p.root[modelValueBehind(g, op.operands[0].value)]] = p.root[op.operands[0].value];
  }
  return gathered;
}

// The ranks holding the same slice of a parameter (its data-parallel replicas): the mesh's axes
// its held layout does not use.
double replicasOf(const Graph& g, ValueId v) {
  const Value& value = g.value(v);
  if (!value.layout) return 1;
  std::vector<int> used = value.layout->usedAxes();
  double n = 1;
  for (int a = 0; a < value.layout->mesh.rank(); ++a)
    if (std::find(used.begin(), used.end(), a) == used.end()) n *= static_cast<double>(value.layout->mesh.dims[a]);
  return n;
}

TrainingMemory training(const Graph& g, const Program& p, Optimizer optimizer, int optimizerParallelLevel, int zeroStage,
                        bool lossOnOutputs, bool mixedPrecision) {
  TrainingMemory m;
  // ZeRO: a parameter's share of what is sharded over its replicas (1 where nothing is).
  std::vector<double> share(g.values.size(), 1.0);
  if (zeroStage > 0)
    for (ValueId v : g.parameters) share[v] = 1.0 / replicasOf(g, v);
  // Optimizer parallel: level 1 keeps each sharded parameter's gradient whole until the step
  // (reduce-scattered then), level 2 and 3 reduce-scatter it as it is made; level 3 also gathers
  // a weight again for its backward instead of keeping the gathered copy.
  std::vector<ValueId> gathered = gatheredCopies(g, p);
  std::vector<bool> regathered(g.values.size(), false);
  if (optimizerParallelLevel == 3)
    for (ValueId copy : gathered)
      if (copy != kNoId) regathered[copy] = true;
  m.optimizer = optimizer;
  auto consider = [&](double bytes, const char* phase, const std::string& at) {
    if (bytes <= m.peakBytes) return;
    m.peakBytes = bytes;
    m.peakPhase = phase;
    m.peakAt = at;
  };
  // What each op's backward reads, kept from the forward until the earliest op reading it has
  // run its backward. Parameters are resident anyway; an op computing no floating result has
  // no backward. A recomputed op keeps nothing of its own: only what it reads from outside the
  // recomputed ops (the checkpoint's inputs); its backward first runs its forward again.
  size_t n = g.values.size();
  std::vector<bool> saved(n, false), dropped(n, false);
  std::vector<int> earliestSaver(n, p.end);
  std::vector<std::vector<ValueId>> savedBy(p.end);  // per position: the roots its backward reads
  // A checkpoint recomputes the communication inside it too (torch's checkpoint reruns the
  // function's collectives; Megatron's recomputed layer its tensor-parallel AllReduce): an op
  // inserted for a recomputed op (converting its operand or completing its result) is in its
  // owner's checkpoint.
  auto checkpointOwner = [&](OpId id) {
    const Op& op = g.op(id);
    bool forOwner = op.role == InsertedRole::Redistribution || op.role == InsertedRole::ForwardOp ||
                    op.role == InsertedRole::ReplaceGraph;
    return op.inserted() && forOwner && op.owner != kNoId ? op.owner : id;
  };
  auto recomputed = [&](OpId id) {
    const Op& op = g.op(checkpointOwner(id));
    return !op.inserted() && std::as_const(op).annotation->recompute;
  };
  auto checkpointOf = [&](OpId id) { return std::as_const(g.op(checkpointOwner(id))).annotation->checkpoint; };
  for (int pos = 0; pos < p.end; ++pos) {
    const Op& op = g.op(g.order[pos]);
    // Without an operand that needs a gradient the op has no backward (torch records no node).
    if (std::none_of(op.results.begin(), op.results.end(), [&](ValueId r) { return p.needsGradient[r]; })) continue;
    bool again = recomputed(g.order[pos]);
    if (again) ++m.recomputedOps;
    SavedForBackward s = rulesOf(op).savedForBackward(op);
    auto keep = [&](ValueId v, bool boundary) {
      ValueId r = p.root[v];
      if (resident(p, r) || p.bytes[r] == 0) return;
      savedBy[pos].push_back(r);
      earliestSaver[r] = std::min(earliestSaver[r], pos);
      if ((!again || boundary) && !regathered[r]) saved[r] = true;
      else dropped[r] = true;
    };
    // Outside this op's checkpoint: not recomputed, or recomputed by another checkpoint.
    auto fromOutside = [&](ValueId v) {
      ValueId r = p.root[v];
      OpId producer = g.value(r).producer;
      return producer == kNoId || !recomputed(producer) || checkpointOf(producer) != checkpointOf(g.order[pos]);
    };
    for (int i : s.operands)
      if (i < static_cast<int>(op.operands.size()) && op.operands[i].isValue()) keep(op.operands[i].value, false);
    auto anotherNeedsGradient = [&](int i) {
      for (size_t j = 0; j < op.operands.size(); ++j)
        if (static_cast<int>(j) != i && op.operands[j].isValue() && p.needsGradient[op.operands[j].value]) return true;
      return false;
    };
    for (int i : s.forOtherOperands)
      if (i < static_cast<int>(op.operands.size()) && op.operands[i].isValue() && anotherNeedsGradient(i))
        keep(op.operands[i].value, false);
    for (int i : s.results)
      if (i < static_cast<int>(op.results.size())) keep(op.results[i], false);
    // The checkpoint's inputs: what a recomputed op reads from outside is kept to run it again.
    if (again)
      for (const Operand& o : op.operands)
        if (o.isValue() && p.floating[o.value] && fromOutside(o.value)) keep(o.value, true);
  }
  for (size_t v = 0; v < n; ++v) {
    if (saved[v]) dropped[v] = false;
    if (saved[v]) m.savedActivationBytes += p.bytes[v];
    if (dropped[v]) m.recomputedActivationBytes += p.bytes[v];
  }
  for (ValueId v : g.parameters) (p.holder[v] == Holder::Parameter ? m.parameterBytes : m.constantBytes) += p.bytes[v];

  m.forwardLiveAtOp.reserve(p.end);
  Live afterForward = forwardWalk(g, p, saved, [&](int pos, const Live& live) {
    m.forwardLiveAtOp.push_back(live.total());
    consider(live.total(), "forward", g.op(g.order[pos]).name);
  });
  m.backwardLiveAtOp.assign(p.end, 0);
  // The loss: cross-entropy over each floating output keeps its log-softmax; its backward makes
  // the log-softmax's gradient and the output's.
  std::vector<bool> gradHeld(n, false);
  std::vector<bool> outputSeen(n, false);
  for (ValueId v : g.outputs) {
    ValueId r = p.root[v];
    if (!p.floating[r] || outputSeen[r]) continue;
    outputSeen[r] = true;
    m.outputBytes += p.bytes[r];
    gradHeld[r] = p.needsGradient[r];
  }
  double live = afterForward.total();
  // A pipeline stage before the last has no loss: its outputs' gradients arrive from the next.
  m.lossLiveBytes = live + (lossOnOutputs ? 3 : 1) * m.outputBytes;
  consider(m.lossLiveBytes, lossOnOutputs ? "loss" : "backward", "");
  if (lossOnOutputs) m.savedActivationBytes += m.outputBytes;  // the loss's log-softmax
  live += m.outputBytes;                                       // the outputs' gradients

  // Backward, in reverse: an op's backward makes its floating operands' gradients (a parameter's
  // once, kept for the step; an activation's until its producer's backward), then drops its
  // results' gradients and what it alone still kept.
  for (int pos = p.end - 1; pos >= 0; --pos) {
    const Op& op = g.op(g.order[pos]);
    bool differentiable = std::any_of(op.results.begin(), op.results.end(), [&](ValueId r) { return gradHeld[p.root[r]]; });
    if (differentiable)
      for (const Operand& o : op.operands) {
        if (!o.isValue()) continue;
        ValueId r = p.root[o.value];
        if (!p.needsGradient[r] || gradHeld[r]) continue;
        gradHeld[r] = true;
        // Level 1 keeps a sharded parameter's gradient whole: the gathered copy's size. ZeRO-2
        // reduce-scatters it as it is made: the rank keeps its share.
        double bytes = optimizerParallelLevel == 1 && gathered[r] != kNoId ? p.bytes[gathered[r]] : p.bytes[r];
        if (zeroStage >= 2 && p.holder[r] == Holder::Parameter) bytes *= share[r];
        live += bytes;
        if (p.holder[r] == Holder::Parameter) m.gradientBytes += bytes;
      }
    // A recomputed op's forward runs again first: what its backward reads is back.
    for (ValueId r : savedBy[pos])
      if (dropped[r] && !saved[r]) {
        saved[r] = true;
        live += p.bytes[r];
      }
    consider(live, "backward", op.name);
    m.backwardLiveAtOp[pos] = live;
    for (ValueId res : op.results) {
      ValueId r = p.root[res];
      if (res == r && gradHeld[r] && !resident(p, r) && p.bytes[r] > 0) {
        live -= p.bytes[r];
        gradHeld[r] = false;
      }
    }
    for (ValueId r : savedBy[pos])
      if (saved[r] && earliestSaver[r] == pos) {
        live -= p.bytes[r];
        saved[r] = false;
      }
  }
  // The update: the optimizer's float32 states per parameter element exist from the first step.
  double elements = 0;
  for (ValueId v : g.parameters)
    if (p.needsGradient[v]) elements += p.bytes[v] / byteSize(p.dtype[v]) * share[v];
  m.optimizerStateBytes = elements * 4 * optimizerStatesPerElement(optimizer);
  // Mixed precision: the optimizer updates float32 master weights beside the 16-bit ones.
  if (mixedPrecision) m.masterWeightBytes = elements * 4;
  m.stepLiveBytes = live + m.optimizerStateBytes + m.masterWeightBytes;
  consider(m.stepLiveBytes, "optimizer step", "");
  return m;
}

}  // namespace

MemoryEstimate estimateMemory(const Graph& graph, const ParallelSettings& settings, bool lossOnOutputs) {
  Program p = programOf(graph, settings.globalRank, settings.precision);
  MemoryEstimate e;
  e.inference = inference(graph, p);
  if (settings.training)
    e.training = training(graph, p, settings.optimizer, settings.parallelOptimizerLevel, settings.zeroStage, lossOnOutputs,
                          settings.precision != Precision::Fp32);
  return e;
}

double parameterStepBytes(double bytes, DType dtype, const ParallelSettings& settings) {
  DType held = computeDType(dtype, settings.precision);
  double elements = bytes / byteSize(dtype);
  if (!settings.training) return elements * byteSize(held);
  double master = held == dtype ? 0 : 4;  // mixed precision's float32 master weight
  return 2 * elements * byteSize(held) + elements * (master + 4 * optimizerStatesPerElement(settings.optimizer));
}

}  // namespace irc
