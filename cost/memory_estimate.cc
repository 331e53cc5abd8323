#include "cost/memory_estimate.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "ops/collective.h"
#include "ops/inserted_ops.h"
#include "ops/op_defs.h"
#include "ops/op_family.h"
#include "ops/op_traits.h"
#include "ops/shape_inference.h"
#include "cost/attention_fusion.h"
#include "cost/linear_layers.h"

namespace irc {
namespace {

// Constant: what a model holds but does not train (an ONNX export's buffers and folded masks).
enum class Holder { Parameter, Activation, Communication, Constant };

// The rank's program as memory sees it: every value's local bytes, the value whose memory it
// uses (a view uses its operand's), and when that memory is last read.
struct Program {
  std::vector<double> bytes;        // per value: its own memory (0 for a view)
  std::vector<ValueId> root;        // per value: whose memory it is
  std::vector<int> lastUse;         // per root: the last position reading it or a view of it
  std::vector<Holder> holder;       // per value
  std::vector<bool> floating;       // per value: a floating dtype
  std::vector<bool> needsGradient;  // per value: trainable, or computed from a trainable value (torch's requires_grad)
  std::vector<DType> dtype;
  int end = 0;  // positions are 0 .. end - 1
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
    InferResult r = inferOnOperandTypes(OpForRank(g, op, rank, RankDetail::Shapes), operandTypes);
    if (auto* t = std::get_if<std::vector<TensorType>>(&r))
      for (size_t i = 0; i < t->size() && i < op.results.size(); ++i) local[op.results[i]] = (*t)[i].shape;
  }
  return local;
}

// `precision`: a floating value is held in its compute dtype (16-bit in the mixed modes).
// `viewsOfOperand`: per value, a result that shares its op's first operand's memory beyond the
// ops' own views (a grouped-query attention's repeated keys and values, which a fused kernel
// reads unrepeated: cost/attention_fusion.h).
Program programOf(const Graph& g, int64_t rank, Precision precision, const std::vector<bool>& viewsOfOperand) {
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
    const bool view = !op.inserted() && (rulesOf(op).resultIsView(g, op) ||
                                         (!viewsOfOperand.empty() && !op.results.empty() && viewsOfOperand[op.results[0]]));
    int shared = (op.inserted() && op.role == InsertedRole::Mirror) || view ? 0 : -1;
    if (shared < 0 && !op.inserted()) {
      int into = rulesOf(op).accumulatesInto(g, op);
      if (into >= 0 && readers[op.operands[into].value] == 1 && p.bytes[op.operands[into].value] == p.bytes[op.results[0]])
        shared = into;
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

// What each op's backward reads, kept from the forward until the earliest op reading it has run
// its backward. Parameters are resident anyway; an op computing no floating result has no
// backward. A recomputed op keeps nothing of its own: only what it reads from outside the
// recomputed ops (the checkpoint's inputs); its backward first runs its forward again.
struct SavedForBackwardPlan {
  std::vector<bool> saved, dropped;           // per root value: kept from the forward; recomputed instead
  std::vector<int> earliestSaver;             // per root value: the first position whose backward reads it
  std::vector<std::vector<ValueId>> savedBy;  // per position: the roots its backward reads
  int recomputedOps = 0;
};

// A checkpoint recomputes the communication inside it too (torch's checkpoint reruns the
// function's collectives; Megatron's recomputed layer its tensor-parallel AllReduce): an op
// inserted for a recomputed op (converting its operand or completing its result) is in its
// owner's checkpoint.
OpId checkpointOwner(const Graph& g, OpId id) {
  const Op& op = g.op(id);
  bool forOwner =
      op.role == InsertedRole::Redistribution || op.role == InsertedRole::ForwardOp || op.role == InsertedRole::ReplaceGraph;
  return op.inserted() && forOwner && op.owner != kNoId ? op.owner : id;
}

bool recomputed(const Graph& g, OpId id) {
  const Op& op = g.op(checkpointOwner(g, id));
  return !op.inserted() && std::as_const(op).annotation->recompute;
}

// `rebuiltFrom`: per root value, what the backward makes it again from instead of keeping it
// (kNoId: kept as it is): optimizer parallel level 3's weights and a low-precision recipe's
// sequence-parallel activations gathered again, a fused gated unit's activation computed again
// (quantizeForLinearLayers, fuseGatedUnits). The source is kept in its place.
SavedForBackwardPlan savedForBackward(const Graph& g, const Program& p, const std::vector<ValueId>& rebuiltFrom) {
  size_t n = g.values.size();
  SavedForBackwardPlan plan{std::vector<bool>(n, false), std::vector<bool>(n, false), std::vector<int>(n, p.end),
                            std::vector<std::vector<ValueId>>(p.end), 0};
  auto checkpointOf = [&](OpId id) { return std::as_const(g.op(checkpointOwner(g, id))).annotation->checkpoint; };
  for (int pos = 0; pos < p.end; ++pos) {
    const Op& op = g.op(g.order[pos]);
    // Without an operand that needs a gradient the op has no backward (torch records no node).
    if (std::none_of(op.results.begin(), op.results.end(), [&](ValueId r) { return p.needsGradient[r]; })) continue;
    bool again = recomputed(g, g.order[pos]);
    if (again) ++plan.recomputedOps;
    SavedForBackward s = rulesOf(op).savedForBackward(op);
    auto keepRoot = [&](ValueId r, bool boundary, bool rebuilt) {
      if (resident(p, r) || p.bytes[r] == 0) return;
      plan.savedBy[pos].push_back(r);
      plan.earliestSaver[r] = std::min(plan.earliestSaver[r], pos);
      if ((!again || boundary) && !rebuilt) plan.saved[r] = true;
      else plan.dropped[r] = true;
    };
    auto keep = [&](ValueId v, bool boundary) {
      ValueId r = p.root[v], source = rebuiltFrom[p.root[v]];
      keepRoot(r, boundary, source != kNoId);
      if (source != kNoId) keepRoot(source, boundary, false);
    };
    // Outside this op's checkpoint: not recomputed, or recomputed by another checkpoint.
    auto fromOutside = [&](ValueId v) {
      ValueId r = p.root[v];
      OpId producer = g.value(r).producer;
      return producer == kNoId || !recomputed(g, producer) || checkpointOf(producer) != checkpointOf(g.order[pos]);
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
  return plan;
}

// A rank's share of a sharded tensor's elements: whole elements, the last shard padded as
// DeepSpeed's and MindSpore's partitions are (so every figure is whole bytes).
double shardElements(double elements, double share) { return share >= 1 ? elements : std::ceil(elements * share); }

// The sharding of optimizer state and gradients a step runs under.
struct Sharding {
  int optimizerParallelLevel = 0;
  int zeroStage = 0;
  std::vector<double> share;      // ZeRO: a parameter's share of what is sharded over its replicas
  std::vector<ValueId> gathered;  // optimizer parallel: each parameter's gathered copy, if any
};

// The step's memory over time, phase by phase (forward, loss, backward, update), walked once
// with what only the step itself allocates (activations, their gradients, the parameters'
// gradients as backward makes them); `settle` then lays what outlives a step underneath for the
// steady state and for the first step.
class TrainingWalk {
 public:
  TrainingWalk(const Graph& g, const Program& p, const Sharding& sharding, SavedForBackwardPlan plan, double quantizedWeights)
      : g_(g), p_(p), sharding_(sharding), plan_(std::move(plan)) {
    m_.quantizedWeightBytes = quantizedWeights;
  }

  TrainingMemory run(const ParallelSettings& settings, StepPlace place) {
    m_.optimizer = settings.optimizer;
    m_.gradientBuffer = settings.gradientBuffer;
    m_.optimizerKernels = settings.optimizerKernels;
    m_.inFlightMicroBatches = place.inFlightMicroBatches;
    m_.recomputedOps = plan_.recomputedOps;
    countKept();
    double live = forward();
    live = loss(live, place.lossOnOutputs);
    live = backward(live);
    update(live, settings);
    settle(settings);
    return m_;
  }

 private:
  void countKept() {
    for (size_t v = 0; v < g_.values.size(); ++v) {
      if (plan_.saved[v]) plan_.dropped[v] = false;
      if (plan_.saved[v]) m_.savedActivationBytes += p_.bytes[v];
      if (plan_.dropped[v]) m_.recomputedActivationBytes += p_.bytes[v];
    }
    for (ValueId v : g_.parameters) (p_.holder[v] == Holder::Parameter ? m_.parameterBytes : m_.constantBytes) += p_.bytes[v];
  }

  double forward() {
    m_.firstForwardLiveAtOp.reserve(p_.end);
    Live afterForward =
        forwardWalk(g_, p_, plan_.saved, [&](int, const Live& live) { m_.firstForwardLiveAtOp.push_back(live.total()); });
    return afterForward.total();
  }

  // The loss: cross-entropy over each floating output keeps its log-softmax; its backward makes
  // the log-softmax's gradient and the output's. A pipeline stage before the last has no loss,
  // and no stage has one on what it sends on (a Send's result): those gradients arrive from the
  // next stage.
  double loss(double live, bool lossOnOutputs) {
    gradHeld_.assign(g_.values.size(), false);
    std::vector<bool> outputSeen(g_.values.size(), false);
    double lossBytes = 0;  // the outputs a loss is taken over
    for (ValueId v : g_.outputs) {
      ValueId r = p_.root[v];
      if (!p_.floating[r] || outputSeen[r]) continue;
      outputSeen[r] = true;
      m_.outputBytes += p_.bytes[r];
      gradHeld_[r] = p_.needsGradient[r];
      const OpId producer = g_.value(r).producer;
      const bool sent = producer != kNoId && g_.op(producer).step && isSend(*g_.op(producer).step);
      if (lossOnOutputs && !sent) lossBytes += p_.bytes[r];
    }
    m_.firstLossLiveBytes = live + m_.outputBytes + 2 * lossBytes;
    lossPhase_ = lossOnOutputs ? "loss" : "backward";
    m_.savedActivationBytes += lossBytes;  // the loss's log-softmax
    return live + m_.outputBytes;          // the outputs' gradients
  }

  // Backward, in reverse: an op's backward makes its floating operands' gradients (a parameter's
  // once, kept for the step; an activation's until its producer's backward), then drops its
  // results' gradients and what it alone still kept.
  double backward(double live) {
    m_.firstBackwardLiveAtOp.assign(p_.end, 0);
    gradientsMadeAtOp_.assign(p_.end, 0);
    for (int pos = p_.end - 1; pos >= 0; --pos) {
      const Op& op = g_.op(g_.order[pos]);
      addOperandGradients(op, live);
      // A recomputed op's forward runs again first: what its backward reads is back.
      for (ValueId r : plan_.savedBy[pos])
        if (plan_.dropped[r] && !plan_.saved[r]) {
          plan_.saved[r] = true;
          live += p_.bytes[r];
        }
      m_.firstBackwardLiveAtOp[pos] = live;
      gradientsMadeAtOp_[pos] = m_.gradientBytes;
      for (ValueId res : op.results) {
        ValueId r = p_.root[res];
        if (res == r && gradHeld_[r] && !resident(p_, r) && p_.bytes[r] > 0) {
          live -= p_.bytes[r];
          gradHeld_[r] = false;
        }
      }
      for (ValueId r : plan_.savedBy[pos])
        if (plan_.saved[r] && plan_.earliestSaver[r] == pos) {
          live -= p_.bytes[r];
          plan_.saved[r] = false;
        }
    }
    return live;
  }

  // The gradients an op's backward makes (its operands' not yet held), onto `live`.
  void addOperandGradients(const Op& op, double& live) {
    bool differentiable = std::any_of(op.results.begin(), op.results.end(), [&](ValueId r) { return gradHeld_[p_.root[r]]; });
    if (!differentiable) return;
    for (const Operand& o : op.operands) {
      if (!o.isValue()) continue;
      ValueId r = p_.root[o.value];
      if (!p_.needsGradient[r] || gradHeld_[r]) continue;
      gradHeld_[r] = true;
      // Level 1 keeps a sharded parameter's gradient whole: the gathered copy's size. ZeRO-2
      // reduce-scatters it as it is made: the rank keeps its share.
      double bytes =
          sharding_.optimizerParallelLevel == 1 && sharding_.gathered[r] != kNoId ? p_.bytes[sharding_.gathered[r]] : p_.bytes[r];
      if (sharding_.zeroStage >= 2 && p_.holder[r] == Holder::Parameter)
        bytes = shardElements(bytes / byteSize(p_.dtype[r]), sharding_.share[r]) * byteSize(p_.dtype[r]);
      live += bytes;
      if (p_.holder[r] == Holder::Parameter) m_.gradientBytes += bytes;
    }
  }

  // The update: the optimizer's float32 states per parameter element; under mixed precision it
  // updates float32 master weights beside the 16-bit ones; its kernels' temporaries on top.
  void update(double live, const ParallelSettings& settings) {
    double elements = 0, largest = 0;
    for (ValueId v : g_.parameters)
      if (p_.needsGradient[v]) {
        double e = shardElements(p_.bytes[v] / byteSize(p_.dtype[v]), sharding_.share[v]);
        elements += e;
        largest = std::max(largest, e);
      }
    m_.optimizerStateBytes = elements * optimizerStateBytesPerElement(settings.optimizer, settings.precision);
    if (settings.precision != Precision::Fp32) m_.masterWeightBytes = elements * 4;
    m_.optimizerTemporaryBytes = optimizerTemporaries(settings, elements, largest);
    m_.stepLiveBytes =
        live + m_.optimizerStateBytes + m_.masterWeightBytes + m_.quantizedWeightBytes + m_.optimizerTemporaryBytes;
  }

  // Adam's update divides by sqrt(v) + eps: torch's loop makes sqrt(v) and its quotient for one
  // parameter at a time (two temporaries of its size; torch/optim/adamw.py,
  // _single_tensor_adamw), its foreach kernels one copy of every parameter at once
  // (_multi_tensor_adamw's _foreach_sqrt); SGD and momentum update in place, a fused kernel keeps
  // its temporaries in registers. float32 elements: the optimizer works on float32 (master)
  // weights.
  static double optimizerTemporaries(const ParallelSettings& settings, double elements, double largest) {
    bool adam = settings.optimizer == Optimizer::AdamW || settings.optimizer == Optimizer::Adam;
    if (!adam) return 0;
    switch (settings.optimizerKernels) {
      case OptimizerKernels::ForLoop: return 2 * largest * 4;
      case OptimizerKernels::Foreach: return elements * 4;
      case OptimizerKernels::Fused: return 0;
    }
    return 0;
  }

  // What outlives a step, under every point of the walk. From the first step on: the parameters
  // and constants (walked), the master weights (made when the optimizer is built), and the
  // gradients where they are resident: a persistent buffer, or micro-batches accumulating into
  // them (the second micro-batch starts with the first's). The steady state adds the optimizer's
  // states, which the first step creates inside its update. A pipeline stage's other in-flight
  // micro-batches' saved activations lie under its forward and backward.
  void settle(const ParallelSettings& settings) {
    m_.gradientsResident = settings.gradientBuffer == GradientBuffer::Persistent || settings.microBatches > 1;
    const double inFlight = m_.otherMicroBatchesBytes();
    const double under =
        inFlight + m_.masterWeightBytes + m_.quantizedWeightBytes + (m_.gradientsResident ? m_.gradientBytes : 0);
    m_.residentBytes = m_.parameterBytes + m_.constantBytes + m_.optimizerStateBytes + m_.masterWeightBytes +
                       m_.quantizedWeightBytes + (m_.gradientsResident ? m_.gradientBytes : 0);
    Peak first, steady;
    auto at = [&](double walked, double made, const char* phase, const std::string& op) {
      double bytes = walked + under - (m_.gradientsResident ? made : 0);
      first.consider(bytes, phase, op);
      steady.consider(bytes + m_.optimizerStateBytes, phase, op);
      return bytes;
    };
    m_.forwardLiveAtOp.resize(p_.end);
    m_.backwardLiveAtOp.resize(p_.end);
    for (int pos = 0; pos < p_.end; ++pos) {
      m_.firstForwardLiveAtOp[pos] = at(m_.firstForwardLiveAtOp[pos], 0, "forward", g_.op(g_.order[pos]).name);
      m_.forwardLiveAtOp[pos] = m_.firstForwardLiveAtOp[pos] + m_.optimizerStateBytes;
    }
    m_.firstLossLiveBytes = at(m_.firstLossLiveBytes, 0, lossPhase_, "");
    m_.lossLiveBytes = m_.firstLossLiveBytes + m_.optimizerStateBytes;
    for (int pos = p_.end - 1; pos >= 0; --pos) {
      m_.firstBackwardLiveAtOp[pos] =
          at(m_.firstBackwardLiveAtOp[pos], gradientsMadeAtOp_[pos], "backward", g_.op(g_.order[pos]).name);
      m_.backwardLiveAtOp[pos] = m_.firstBackwardLiveAtOp[pos] + m_.optimizerStateBytes;
    }
    first.consider(m_.stepLiveBytes, "optimizer step", "");
    steady.consider(m_.stepLiveBytes, "optimizer step", "");
    m_.peakBytes = steady.bytes, m_.peakPhase = steady.phase, m_.peakAt = steady.at;
    m_.firstStepPeakBytes = first.bytes, m_.firstStepPeakPhase = first.phase, m_.firstStepPeakAt = first.at;
  }

  struct Peak {
    double bytes = 0;
    std::string phase, at;
    void consider(double b, const char* p, const std::string& op) {
      if (b <= bytes) return;
      bytes = b, phase = p, at = op;
    }
  };

  const Graph& g_;
  const Program& p_;
  const Sharding& sharding_;
  SavedForBackwardPlan plan_;
  std::vector<bool> gradHeld_;
  std::vector<double> gradientsMadeAtOp_;  // per position: the parameter gradients made once its backward ran
  const char* lossPhase_ = "loss";
  TrainingMemory m_;
};

// A fused attention kernel (FlashAttention; MindSpore's FlashAttentionScore) never writes the
// scores, what the scale and mask make of them, or the probabilities: they take no memory, and
// neither do their gradients (backward recomputes them on chip, block by block). What it keeps
// for backward besides its output is one float32 statistic per row of the scores, the
// log-sum-exp of each query's scores (FlashAttention-2's `L`, Dao 2023 Algorithm 1; backward
// makes one more of the same size, D = rowsum(dO * O)): the probabilities' value stands for it,
// with that size, so that what the second product saves is the statistic.
void keepAttentionOnChip(const Graph& g, Program& p, const std::vector<bool>& onChip) {
  using Part = OpFamilyRules::AttentionPart;
  for (size_t v = 0; v < onChip.size(); ++v) {
    if (!onChip[v]) continue;
    const Value& value = g.values[v];
    bool probabilities =
        value.producer != kNoId && rulesOf(g.op(value.producer)).attentionPart(g.op(value.producer)) == Part::Softmax;
    if (!probabilities) {
      p.bytes[v] = 0;
      continue;
    }
    // Rows: the local elements over the local length of the last dim (the keys).
    const Op& softmax = g.op(value.producer);
    int64_t keys = value.type.shape.empty() ? 1 : value.type.shape.back();
    if (softmax.parallel->layoutsInferred && !softmax.parallel->outputLayouts.empty()) {
      Shape slice = softmax.parallel->outputLayouts[0].sliceShape();
      if (!slice.empty()) keys = slice.back();
    }
    const double rows = p.bytes[v] / byteSize(p.dtype[v]) / static_cast<double>(std::max<int64_t>(1, keys));
    p.bytes[v] = rows * 4;
  }
}

TrainingMemory training(const Graph& g, const Program& p, const ParallelSettings& settings, StepPlace place,
                        double quantizedWeights, std::vector<ValueId> rebuiltFrom) {
  const int level = settings.parallelOptimizerLevel, zeroStage = settings.zeroStage;
  Sharding sharding{level, zeroStage, std::vector<double>(g.values.size(), 1.0), gatheredCopies(g, p)};
  if (zeroStage > 0)
    for (ValueId v : g.parameters) sharding.share[v] = 1.0 / replicasOf(g, v);
  // Optimizer parallel: level 1 keeps each sharded parameter's gradient whole until the step
  // (reduce-scattered then), level 2 and 3 reduce-scatter it as it is made; level 3 also gathers
  // a weight again for its backward instead of keeping the gathered copy.
  if (level == 3)
    for (size_t w = 0; w < sharding.gathered.size(); ++w)
      if (ValueId copy = sharding.gathered[w]; copy != kNoId) rebuiltFrom[copy] = static_cast<ValueId>(w);
  return TrainingWalk(g, p, sharding, savedForBackward(g, p, rebuiltFrom), quantizedWeights).run(settings, place);
}

// Per root value: the ops reading it (an op making a view of it not counted).
std::vector<int> readersOf(const Graph& g, const Program& p) {
  std::vector<int> readers(g.values.size(), 0);
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    std::vector<ValueId> read;
    for (const Operand& o : op.operands)
      if (o.isValue()) read.push_back(p.root[o.value]);
    std::sort(read.begin(), read.end());
    read.erase(std::unique(read.begin(), read.end()), read.end());
    for (ValueId r : read)
      if (op.results.empty() || p.root[op.results[0]] != r) ++readers[r];
  }
  return readers;
}

// A low-precision recipe in training (plan/precision.h): a linear layer keeps its activation for
// the weight gradient as the quantized column-wise copy it made (Transformer Engine's Linear
// saves its cast input, a LayerNormLinear's norm writes it cast), so a value only such products
// save for backward is held in the recipe's format; one another op's backward reads too stays
// 16-bit (that second, quantized copy is not counted). TE's sequence-parallel Linear keeps its
// rank's share of the tokens, not the gathered ones, and gathers them again in the backward for
// the weight gradient (issued before the input gradient's GEMM, which hides it: not timed): an
// AllGather whose result only linear layers save, of a value the gather alone reads, is gathered
// again from that value (`rebuiltFrom`), which is held cast (the norm before TE's
// LayerNormLinear writes its output cast). Returns the bytes of the linear layers' weights cast,
// row- and column-wise, which live through the step.
double quantizeForLinearLayers(const Graph& g, Program& p, const PrecisionRecipe& recipe, const std::vector<int>& readers,
                               std::vector<ValueId>& rebuiltFrom) {
  std::vector<int> weight = linearLayerWeightOperands(g);
  std::vector<bool> byLinear(g.values.size(), false), byOther(g.values.size(), false), counted(g.values.size(), false);
  double weights = 0;
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    if (weight[id] >= 0 && op.operands[weight[id]].isValue()) {
      ValueId w = p.root[modelValueBehind(g, op.operands[weight[id]].value)];
      if (!counted[w] && p.floating[w]) weights += 2 * recipe.weightCopyBytes(p.bytes[w] / byteSize(p.dtype[w]));
      counted[w] = true;
    }
    if (std::none_of(op.results.begin(), op.results.end(), [&](ValueId r) { return p.needsGradient[r]; })) continue;
    SavedForBackward saved = rulesOf(op).savedForBackward(op);
    auto mark = [&](const std::vector<int>& operands) {
      for (int i : operands)
        if (i < static_cast<int>(op.operands.size()) && op.operands[i].isValue())
          (weight[id] >= 0 && i == 1 - weight[id] ? byLinear : byOther)[p.root[op.operands[i].value]] = true;
    };
    mark(saved.operands);
    mark(saved.forOtherOperands);
    for (int i : saved.results)
      if (i < static_cast<int>(op.results.size())) byOther[p.root[op.results[i]]] = true;
  }
  auto onlyByLinear = [&](ValueId v) { return byLinear[v] && !byOther[v] && p.floating[v] && p.bytes[v] > 0; };
  // The AllGather behind a value, through the local steps that follow it (a Split and Concat
  // moving the gathered dim, reshapes): the value gathered, or kNoId.
  auto gatheredFrom = [&](ValueId v) {
    for (int hops = 0; hops < 16; ++hops) {
      OpId producer = g.value(v).producer;
      if (producer == kNoId) return kNoId;
      const Op& op = g.op(producer);
      if (!op.inserted() || op.operands.empty() || !op.operands[0].isValue()) return kNoId;
      std::optional<CollectiveKind> kind = op.step ? collectiveOf(*op.step) : std::nullopt;
      if (kind == CollectiveKind::AllGather) return p.root[op.operands[0].value];
      if (kind) return kNoId;
      v = op.operands[0].value;
    }
    return kNoId;
  };
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (!onlyByLinear(v) || p.root[v] != static_cast<ValueId>(v)) continue;
    const ValueId source = gatheredFrom(static_cast<ValueId>(v));
    if (source == kNoId || source == static_cast<ValueId>(v) || byLinear[source] || byOther[source] || !p.floating[source] ||
        resident(p, source) || readers[source] != 1)
      continue;
    rebuiltFrom[v] = source;
    p.bytes[source] = recipe.activationCopyBytes(p.bytes[source] / byteSize(p.dtype[source]));
  }
  for (size_t v = 0; v < g.values.size(); ++v)
    if (onlyByLinear(v)) p.bytes[v] = recipe.activationCopyBytes(p.bytes[v] / byteSize(p.dtype[v]));
  return weights;
}

// Under a low-precision recipe the MLP's gated unit is the fused kernel the recipe's stack runs
// (Megatron-Core's bias_swiglu / bias_geglu, Transformer Engine's LayerNormMLP): it keeps its
// inputs, the gate's and the value's products, and its backward computes the activation again
// from the gate; the activation's result (SiLU(gate) before the Mul) is not kept. A gate
// activation whose one reader is a Mul is made again from its input (`rebuiltFrom`).
void fuseGatedUnits(const Graph& g, const Program& p, const std::vector<int>& readers, std::vector<ValueId>& rebuiltFrom) {
  for (OpId id : g.order) {
    const Op& mul = g.op(id);
    if (mul.inserted() || !isMul(mul) || mul.operands.size() != 2) continue;
    for (const Operand& o : mul.operands) {
      if (!o.isValue()) continue;
      ValueId act = p.root[o.value];
      OpId producer = g.value(act).producer;
      if (producer == kNoId || readers[act] != 1) continue;
      const Op& activation = g.op(producer);
      if (!isGateActivation(activation) || activation.operands.empty() || !activation.operands[0].isValue()) continue;
      if (rebuiltFrom[act] == kNoId && p.floating[act]) rebuiltFrom[act] = p.root[activation.operands[0].value];
    }
  }
}

}  // namespace

MemoryEstimate estimateMemory(const Graph& graph, const ParallelSettings& settings, StepPlace place) {
  FusedAttention fusedAttention;
  if (settings.cluster && settings.cluster->fusedAttention) fusedAttention = fusedAttentionOf(graph);
  Program p = programOf(graph, settings.globalRank, settings.precision, fusedAttention.repeatedKeysAndValues);
  if (!fusedAttention.onChip.empty()) keepAttentionOnChip(graph, p, fusedAttention.onChip);
  MemoryEstimate e;
  e.inference = inference(graph, p);
  if (!settings.training) return e;
  const PrecisionRecipe& recipe = recipeOf(settings.precision);
  std::vector<ValueId> rebuiltFrom(graph.values.size(), kNoId);
  double quantizedWeights = 0;
  if (recipe.lowPrecision()) {
    const std::vector<int> readers = readersOf(graph, p);
    quantizedWeights = quantizeForLinearLayers(graph, p, recipe, readers, rebuiltFrom);
    fuseGatedUnits(graph, p, readers, rebuiltFrom);
  }
  e.training = training(graph, p, settings, place, quantizedWeights, std::move(rebuiltFrom));
  return e;
}

double parameterStepBytes(double bytes, DType dtype, const ParallelSettings& settings) {
  DType held = computeDType(dtype, settings.precision);
  double elements = bytes / byteSize(dtype);
  if (!settings.training) return elements * byteSize(held);
  double master = held == dtype ? 0 : 4;  // mixed precision's float32 master weight
  return 2 * elements * byteSize(held) +
         elements * (master + optimizerStateBytesPerElement(settings.optimizer, settings.precision));
}

std::vector<PeakTerm> peakTerms(const TrainingMemory& t) {
  const bool update = t.peakPhase == "optimizer step";
  // After the last backward no other micro-batch's activations are held.
  const double others = update ? 0 : t.otherMicroBatchesBytes();
  std::vector<PeakTerm> terms = {{"parameters", t.parameterBytes, ""},
                                 {"constants", t.constantBytes, "held, not trained: masks, buffers"},
                                 {"gradients", t.gradientsResident ? t.gradientBytes : 0, ""},
                                 {"optimizer states", t.optimizerStateBytes, ""},
                                 {"master weights", t.masterWeightBytes, ""},
                                 {"quantized copies", t.quantizedWeightBytes, "the recipe's weight casts"},
                                 {"in-flight activations", others,
                                  fmt::format("saved activations of {} other micro-batch{} in flight", t.inFlightMicroBatches - 1,
                                              t.inFlightMicroBatches == 2 ? "" : "es")}};
  double held = 0;
  for (const PeakTerm& term : terms) held += term.bytes;
  terms.push_back({"live at the peak", t.peakBytes - held,
                   update ? "in the update: its temporaries, the gradients, the outputs"
                          : fmt::format("in the {}: one micro-batch's activations and gradients", t.peakPhase)});
  std::erase_if(terms, [](const PeakTerm& term) { return term.bytes == 0; });
  return terms;
}

}  // namespace irc
