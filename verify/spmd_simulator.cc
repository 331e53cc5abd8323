#include "verify/spmd_simulator.h"

#include "ir/limits.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "ops/inserted_ops.h"
#include "ops/op_defs.h"
#include "ops/reference_ops.h"
#include "plan/plan_queries.h"
#include "ops/op_family.h"

namespace irc {

// NaN against NaN, and an infinity against the same infinity, agree: `inf - inf` is NaN, which
// no tolerance accepts (a Log of zero gives -inf on one device and on every rank alike).
static bool sameSpecialValue(double got, double want) {
  if (std::isnan(got) && std::isnan(want)) return true;
  return std::isinf(got) && got == want;
}
namespace {

// splitmix64: the same numbers on every machine and standard library.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }  // [-1, 1)
};

// Integer inputs are indices: keep them inside every table or depth they index.
int64_t indexBound(const Graph& g, ValueId v) {
  int64_t bound = 4;
  bool constrained = false;
  for (const Op& op : g.ops)
    for (size_t i = 0; i < op.operands.size(); ++i) {
      if (op.operands[i].value != v) continue;
      int64_t b = rulesOf(op).indexBound(g, op, i);
      if (b > 0) {
        bound = constrained ? std::min(bound, b) : b;
        constrained = true;
      }
    }
  return bound;
}

std::vector<TensorValue> runLocal(const Graph& g, const Op& op, const std::vector<TensorValue>& values) {
  std::vector<const TensorValue*> in;
  for (const Operand& o : op.operands) in.push_back(o.isValue() ? &values[o.value] : nullptr);
  std::vector<TensorType> results;
  for (ValueId r : op.results) results.push_back(g.value(r).type);
  return evaluateOp(op, in, results);
}

// Every rank's buffers, by value id. Ranks that hold equal data share one buffer (equal input
// slices, a collective's result within its group, an op run on shared buffers), so what several
// ranks compute alike is computed once.
using Buffer = std::shared_ptr<const TensorValue>;
using RankValues = std::map<int64_t, std::vector<Buffer>>;

Buffer share(TensorValue t) { return std::make_shared<const TensorValue>(std::move(t)); }

// Whether a rank's graph runs the op: with pipeline stages, only its own stage's ops.
bool runs(const Graph& g, OpId id) { return g.stageDevices == 0 || g.op(id).stage == g.stage; }

bool sameConstantsAndAttrs(const Op& a, const Op& b) {
  for (size_t i = 0; i < a.operands.size(); ++i)
    if (a.operands[i].constant != b.operands[i].constant) return false;
  return a.attrs == b.attrs;
}

// A local op on every rank. Ranks whose op has the same constants and attributes and reads the
// same buffers would compute the same result: the first computes it, the others share it.
void runLocalOnRanks(const std::map<int64_t, Graph>& locals, OpId id, RankValues& values) {
  std::map<std::vector<const TensorValue*>, std::vector<int64_t>> computedWith;
  for (const auto& [rank, g] : locals) {
    if (!runs(g, id)) continue;
    const Op& op = g.op(id);
    std::vector<const TensorValue*> in;
    for (const Operand& o : op.operands) in.push_back(o.isValue() ? values[rank][o.value].get() : nullptr);
    std::vector<int64_t>& earlier = computedWith[in];
    auto twin =
        std::find_if(earlier.begin(), earlier.end(), [&](int64_t q) { return sameConstantsAndAttrs(locals.at(q).op(id), op); });
    if (twin != earlier.end()) {
      for (ValueId r : op.results) values[rank][r] = values[*twin][r];
      continue;
    }
    std::vector<TensorType> results;
    for (ValueId r : op.results) results.push_back(g.value(r).type);
    auto outs = evaluateOp(op, in, results);
    for (size_t r = 0; r < outs.size(); ++r) values[rank][op.results[r]] = share(std::move(outs[r]));
    earlier.push_back(rank);
  }
}

// One collective across all ranks: its family computes each group's results once
// (OpFamilyRules::evaluateOnGroup), from the members' operands.
void runCollectiveOnRanks(const std::map<int64_t, Graph>& locals, OpId id, RankValues& values) {
  std::map<std::vector<int64_t>, std::vector<Buffer>> perGroup;
  std::vector<std::pair<int64_t, Buffer>> out;
  for (const auto& [rank, g] : locals) {
    if (!runs(g, id)) continue;
    const Op& op = g.op(id);
    // The group comes from the op's step (typed), not from its printed attributes.
    const RedistStep& step = *op.step;
    std::vector<int64_t> group = stepGroup(step, rank);
    std::vector<Buffer>& results = perGroup[group];
    if (results.empty()) {
      std::vector<const TensorValue*> members;
      for (int64_t m : group) members.push_back(values.at(m)[op.operands[0].value].get());
      results = rulesOf(op).evaluateOnGroup(step, members);
    }
    out.emplace_back(rank, results.at(std::find(group.begin(), group.end(), rank) - group.begin()));
  }
  // Written after all ranks read their operands (an operand is never a result of the same op,
  // but a group's members are read by every member).
  if (out.empty()) return;
  ValueId result = locals.begin()->second.op(id).results[0];
  for (auto& [rank, buffer] : out) values[rank][result] = std::move(buffer);
}

// A Receive on every rank of its stage: the data its Send passed on at the rank of the same
// position in the sending stage (the global Receive reads that Send's result).
void runReceiveOnRanks(const Graph& global, const std::map<int64_t, Graph>& locals, OpId id, RankValues& values) {
  const Op& receive = global.op(id);
  ValueId sent = receive.operands[0].value;
  int64_t fromStage = receive.step->peerStage;
  for (const auto& [rank, g] : locals) {
    if (!runs(g, id)) continue;
    int64_t peer = rank - (g.stage - fromStage) * g.stageDevices;
    values[rank][receive.results[0]] = values.at(peer)[sent];
  }
}

}  // namespace

int64_t peakLiveElements(const Graph& graph) {
  // Each value lives from its producer (inputs and parameters: from the start) to its last use;
  // graph outputs to the end.
  std::vector<int64_t> lastUse(graph.values.size(), -1);
  for (size_t i = 0; i < graph.order.size(); ++i)
    for (const Operand& o : graph.op(graph.order[i]).operands)
      if (o.isValue()) lastUse[o.value] = static_cast<int64_t>(i);
  for (ValueId v : graph.outputs) lastUse[v] = static_cast<int64_t>(graph.order.size());
  std::vector<std::vector<ValueId>> dying(graph.order.size() + 1);
  int64_t live = 0, peak = 0;
  auto born = [&](ValueId v, int64_t at) {
    live = std::min(live + numElements(graph.value(v).type.shape), kMaxTensorElements);
    dying[static_cast<size_t>(std::max(lastUse[v], at))].push_back(v);
  };
  for (const auto* list : {&graph.inputs, &graph.parameters})
    for (ValueId v : *list) born(v, 0);
  for (size_t i = 0; i < graph.order.size(); ++i) {
    for (ValueId r : graph.op(graph.order[i]).results) born(r, static_cast<int64_t>(i));
    peak = std::max(peak, live);
    for (ValueId v : dying[i]) live -= numElements(graph.value(v).type.shape);
  }
  return std::max(peak, live);
}

namespace {

// Seeded random values for an input or parameter (indices inside every table or depth they
// index). Each value has its own stream, so that it can be made when first read and dropped
// after its last read: the program's weights are never all held at once.
TensorValue randomInput(const Graph& original, ValueId v, uint64_t seed) {
  Random rng{seed * 0x9E3779B97F4A7C15ULL + 0xD1B54A32D192ED03ULL * static_cast<uint64_t>(v + 1)};
  const Value& value = original.value(v);
  TensorValue t = TensorValue::zeros(value.type.shape);
  bool integral = isInteger(value.type.dtype) || value.type.dtype == DType::Bool;
  int64_t bound = value.type.dtype == DType::Bool ? 2 : indexBound(original, v);
  for (double& x : t.data) x = integral ? static_cast<double>(rng.next() % static_cast<uint64_t>(bound)) : rng.uniform();
  return t;
}

// How many more reads a value has: by ops, plus one for a comparison still to come. A buffer is
// freed when its count reaches zero, so the simulation holds only live values (docs/limits.md).
class ReadCounts {
 public:
  ReadCounts(const Graph& g, const std::vector<ValueId>& extraReads) : left_(g.values.size(), 0) {
    for (const Op& op : g.ops)
      for (const Operand& o : op.operands)
        if (o.isValue()) ++left_[o.value];
    for (ValueId v : extraReads) ++left_[v];
  }
  // Counts one read of `v`; true when it was the last.
  bool read(ValueId v) { return left_[v] > 0 && --left_[v] == 0; }
  bool unread(ValueId v) const { return left_[v] == 0; }  // nothing will read it

 private:
  std::vector<int32_t> left_;
};

void release(TensorValue& t) { TensorValue().data.swap(t.data); }

// The global graph's values to compare, each with the model result it completes: a model op's
// result, or where forward ops follow it, the last of them. A forward op belongs to the result
// it reads (back through the forward ops before it): a multi-result op's conversion of result 1
// does not complete result 0.
std::map<ValueId, ValueId> valuesToCheck(const Graph& global) {
  std::map<ValueId, ValueId> completed;
  for (OpId id : global.order) {
    const Op& op = global.op(id);
    if (op.role != InsertedRole::ForwardOp) continue;
    auto first = std::find_if(op.operands.begin(), op.operands.end(), [](const Operand& o) { return o.isValue(); });
    if (first != op.operands.end()) completed[modelValueBehind(global, first->value)] = op.results[0];
  }
  std::map<ValueId, ValueId> check;  // completed value -> model result
  for (OpId id : global.order) {
    const Op& op = global.op(id);
    if (op.inserted() || !op.parallel->layoutsInferred) continue;
    for (ValueId v : op.results) check[completed.count(v) ? completed[v] : v] = v;
  }
  return check;
}

// Compares every rank's `produced` with its block of the reference `modelValue`; records the
// first mismatch in `result`.
void compareOnEveryRank(const Graph& global, const std::map<int64_t, Graph>& locals, const std::vector<TensorValue>& ref,
                        RankValues& values, ValueId produced, ValueId modelValue, const VerifyOptions& options,
                        VerifyResult& result) {
  const TensorLayout& layout = layoutOfValue(global, modelValue);
  ++result.comparedValues;
  // The tolerance is relative to the larger of the element and the value's largest magnitude: a
  // rank sums the same terms in another order, and an element that cancels to near zero carries
  // the rounding of terms as large as the rest of the tensor.
  double scale = 0;
  for (double x : ref[modelValue].data)
    if (std::isfinite(x)) scale = std::max(scale, std::fabs(x));
  OpId producer = global.value(produced).producer;
  for (const auto& entry : locals) {
    int64_t rank = entry.first;
    if (producer != kNoId && !runs(entry.second, producer)) continue;
    auto ranges = layout.sliceRanges(rank);
    TensorValue want = sliceOf(ref[modelValue], ranges);
    // A value left partial (the optimal planner reduces it on the edge) is compared as the sum
    // (max, min) over its partial group: every piece must count exactly once.
    TensorValue got = *values[rank][produced];
    if (layout.isPartial())
      for (int64_t member : groupAlongAxes(layout.mesh, rank, layout.partialAxes)) {
        if (member == rank) continue;
        const TensorValue& piece = *values[member][produced];
        for (int64_t i = 0; i < got.size(); ++i) got.data[i] = reduceCombine(layout.partialOp, got.data[i], piece.data[i]);
      }
    for (int64_t i = 0; i < want.size(); ++i) {
      double a = got.data[i], b = want.data[i];
      if (sameSpecialValue(a, b)) continue;
      double abs = std::fabs(a - b), rel = abs / std::max(std::fabs(b), 1e-300);
      if (std::isfinite(abs)) {
        result.maxAbsError = std::max(result.maxAbsError, abs);
        if (std::fabs(b) > options.atol) result.maxRelError = std::max(result.maxRelError, rel);
      }
      if (abs <= options.atol + options.rtol * std::max(std::fabs(b), scale) || !result.ok) continue;
      result.ok = false;
      result.op = global.op(global.value(modelValue).producer).name;
      result.rank = rank;
      auto st = stridesOf(want.shape);
      int64_t rest = i;
      for (size_t d = 0; d < st.size(); ++d) {
        result.element.push_back(rest / st[d] + ranges[d].first);
        rest %= st[d];
      }
      result.got = a;
      result.expected = b;
    }
  }
}

}  // namespace

namespace {

// The single-device program and all ranks in lockstep, op by op (a model op keeps its id in the
// global graph); the collectives exchange data by their groups. Inputs and parameters are made
// when first read; every buffer is freed after its last read or comparison.
class Lockstep {
 public:
  Lockstep(const Graph& original, const Graph& global, const std::map<int64_t, Graph>& locals, const VerifyOptions& options)
      : original_(original),
        global_(global),
        locals_(locals),
        options_(options),
        ref_(original.values.size()),
        made_(original.values.size(), false),
        sliced_(original.values.size(), false),
        check_(valuesToCheck(global)),
        refReads_(original, valuesOf(check_, false)),
        rankReads_(global, valuesOf(check_, true)) {
    for (const auto& [rank, g] : locals) values_[rank].resize(g.values.size());
  }

  void run(VerifyResult& result) {
    outputs_ = &result.outputs;
    for (OpId id : global_.order) {
      const Op& gop = global_.op(id);
      sliceForRanks(gop);  // before the reference may drop an input at its last read below
      if (!gop.inserted()) runReference(original_.op(id));
      switch (rulesOf(gop).runsAs(defOf(gop))) {
        case RunsAs::Collective: runCollectiveOnRanks(locals_, id, values_); break;
        case RunsAs::Receive: runReceiveOnRanks(global_, locals_, id, values_); break;
        case RunsAs::EachRank: runLocalOnRanks(locals_, id, values_); break;
      }
      for (const Operand& o : gop.operands)
        if (o.isValue() && rankReads_.read(o.value)) freeOnRanks(o.value);
      for (ValueId r : gop.results)
        if (rankReads_.unread(r)) freeOnRanks(r);
      for (ValueId produced : gop.results) {
        auto it = check_.find(produced);
        if (it == check_.end()) continue;
        compareOnEveryRank(global_, locals_, ref_, values_, produced, it->second, options_, result);
        if (!result.ok) return;
        if (rankReads_.read(produced)) freeOnRanks(produced);
        if (refReads_.read(it->second)) release(ref_[it->second]);
      }
    }
  }

 private:
  // The compared values (`produced`), or the model results they complete.
  static std::vector<ValueId> valuesOf(const std::map<ValueId, ValueId>& check, bool produced) {
    std::vector<ValueId> out;
    for (const auto& [p, model] : check) out.push_back(produced ? p : model);
    return out;
  }
  bool isGraphOutput(ValueId v) const {
    return std::find(original_.outputs.begin(), original_.outputs.end(), v) != original_.outputs.end();
  }
  // (Inputs and parameters have the same ids in the original and the global graph.)
  bool isGraphInput(ValueId v) const { return global_.value(v).producer == kNoId; }

  void makeReference(ValueId v) {
    if (made_[v]) return;
    made_[v] = true;
    if (options_.given)
      if (auto it = options_.given->find(v); it != options_.given->end()) {
        ref_[v] = it->second;
        return;
      }
    ref_[v] = randomInput(original_, v, options_.seed);
  }

  // Each rank's slice of the inputs and parameters `gop` reads first; ranks holding the same
  // slice share one buffer.
  void sliceForRanks(const Op& gop) {
    for (const Operand& o : gop.operands) {
      if (!o.isValue() || !isGraphInput(o.value) || sliced_[o.value]) continue;
      makeReference(o.value);
      std::map<std::vector<std::pair<int64_t, int64_t>>, Buffer> bySlice;
      for (const auto& [rank, g] : locals_) {
        if (!g.value(o.value).rankSlice.written()) continue;  // a pipelined rank of a stage not reading it
        const auto& ranges = g.value(o.value).rankSlice->ranges;
        Buffer& b = bySlice[ranges];
        if (!b) b = share(sliceOf(ref_[o.value], ranges));
        values_[rank][o.value] = b;
      }
      sliced_[o.value] = true;
    }
  }

  void runReference(const Op& op) {
    for (const Operand& o : op.operands)
      if (o.isValue() && isGraphInput(o.value)) makeReference(o.value);
    auto outs = runLocal(original_, op, ref_);
    for (size_t r = 0; r < outs.size(); ++r) {
      if (options_.keepOutputs && isGraphOutput(op.results[r])) (*outputs_)[op.results[r]] = outs[r];
      if (!refReads_.unread(op.results[r])) ref_[op.results[r]] = std::move(outs[r]);
    }
    for (const Operand& o : op.operands)
      if (o.isValue() && refReads_.read(o.value)) release(ref_[o.value]);
  }

  void freeOnRanks(ValueId v) {
    for (auto& [rank, vals] : values_) vals[v].reset();
  }

  const Graph& original_;
  const Graph& global_;
  const std::map<int64_t, Graph>& locals_;
  const VerifyOptions& options_;
  std::vector<TensorValue> ref_;
  RankValues values_;
  std::vector<bool> made_, sliced_;
  std::map<ValueId, ValueId> check_;  // compared value -> the model result it completes
  ReadCounts refReads_, rankReads_;
  std::map<ValueId, TensorValue>* outputs_ = nullptr;
};

}  // namespace

VerifyResult simulateAndCompare(const Graph& original, const Graph& global, const std::map<int64_t, Graph>& locals,
                                const VerifyOptions& options) {
  VerifyResult result;
  // Every value is held in float64 (and a slice of it on every rank) from its producer to its
  // last read: a program whose live values pass the documented bound is refused, not allocated
  // until memory runs out.
  if (int64_t elements = peakLiveElements(original); elements > options.maxElements) {
    result.ok = false;
    result.problem = fmt::format("the program holds {} elements live at once; verify simulates at most {} (docs/limits.md)",
                                 elements, options.maxElements);
    return result;
  }
  try {
    Lockstep(original, global, locals, options).run(result);
  } catch (const ReferenceError& e) {
    result.ok = false;
    result.problem = e.what();
  }
  return result;
}

}  // namespace irc
