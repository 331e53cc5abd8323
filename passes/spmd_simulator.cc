#include "passes/spmd_simulator.h"

#include "ir/limits.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ir/inserted_ops.h"
#include "ir/op_defs.h"
#include "ir/reference_ops.h"
#include "passes/layout_inference.h"
#include "passes/op_families/op_family.h"

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

double combine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::Max: return std::max(a, b);
    case ReduceOp::Min: return std::min(a, b);
    case ReduceOp::Prod: return a * b;
    case ReduceOp::Sum: return a + b;
  }
  return a + b;
}

// One collective across all ranks; returns each rank's result.
std::map<int64_t, TensorValue> runCollective(const std::map<int64_t, Graph>& locals, OpId id,
                                             const std::map<int64_t, std::vector<TensorValue>>& values) {
  std::map<int64_t, TensorValue> out;
  for (const auto& [rank, g] : locals) {
    const Op& op = g.op(id);
    // The group and reduction come from the op's step (typed), not from its printed attributes.
    const RedistStep& step = *op.step;
    std::vector<int64_t> group = stepGroup(step, rank);
    std::vector<TensorValue> members;
    for (int64_t m : group) members.push_back(values.at(m)[locals.at(m).op(id).operands[0].value]);
    int64_t me = std::find(group.begin(), group.end(), rank) - group.begin();
    OpFamily family = op.family();
    if (family == OpFamily::AllReduce || family == OpFamily::ReduceScatter) {
      TensorValue acc = members[0];
      for (size_t k = 1; k < members.size(); ++k)
        for (int64_t i = 0; i < acc.size(); ++i) acc.data[i] = combine(step.reduceOp, acc.data[i], members[k].data[i]);
      out[rank] = family == OpFamily::AllReduce ? acc : blockAlong(acc, 0, static_cast<int64_t>(group.size()), me);
    } else if (family == OpFamily::AllGather) {
      out[rank] = concatAlong(members, 0);
    } else if (family == OpFamily::AlltoAll) {
      std::vector<TensorValue> received;
      for (const auto& m : members) received.push_back(blockAlong(m, step.dim, step.groupSize(), me));
      out[rank] = concatAlong(received, step.concatDim);
    } else {
      throw InternalError("unknown collective " + op.type);
    }
  }
  return out;
}

bool isCollective(const Op& op) {
  OpFamily f = op.family();
  return f == OpFamily::AllReduce || f == OpFamily::AllGather || f == OpFamily::ReduceScatter || f == OpFamily::AlltoAll;
}

}  // namespace

int64_t programElements(const Graph& graph) {
  int64_t total = 0;
  for (const Value& v : graph.values) total = std::min(total + numElements(v.type.shape), kMaxTensorElements);
  return total;
}

namespace {

// Seeded random values for the program's inputs and parameters (indices inside every table or
// depth they index), then the single-device reference run of the whole program.
std::vector<TensorValue> referenceRun(const Graph& original, uint64_t seed) {
  Random rng{seed * 0x9E3779B97F4A7C15ULL + 1};
  std::vector<TensorValue> ref(original.values.size());
  for (const auto* list : {&original.inputs, &original.parameters})
    for (ValueId v : *list) {
      const Value& value = original.value(v);
      TensorValue t = TensorValue::zeros(value.type.shape);
      bool integral = isInteger(value.type.dtype) || value.type.dtype == DType::Bool;
      int64_t bound = value.type.dtype == DType::Bool ? 2 : indexBound(original, v);
      for (double& x : t.data) x = integral ? static_cast<double>(rng.next() % static_cast<uint64_t>(bound)) : rng.uniform();
      ref[v] = std::move(t);
    }
  for (OpId id : original.order) {
    const Op& op = original.op(id);
    auto outs = runLocal(original, op, ref);
    for (size_t r = 0; r < outs.size(); ++r) ref[op.results[r]] = std::move(outs[r]);
  }
  return ref;
}

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
    if (op.inserted() || !op.parallel.layoutsInferred) continue;
    for (ValueId v : op.results) check[completed.count(v) ? completed[v] : v] = v;
  }
  return check;
}

// Compares every rank's `produced` with its block of the reference `modelValue`; records the
// first mismatch in `result`.
void compareOnEveryRank(const Graph& global, const std::map<int64_t, Graph>& locals, const std::vector<TensorValue>& ref,
                        std::map<int64_t, std::vector<TensorValue>>& values, ValueId produced, ValueId modelValue,
                        const VerifyOptions& options, VerifyResult& result) {
  const TensorLayout& layout = layoutOfValue(global, modelValue);
  ++result.comparedValues;
  for (const auto& entry : locals) {
    int64_t rank = entry.first;
    auto ranges = layout.sliceRanges(rank);
    TensorValue want = sliceOf(ref[modelValue], ranges);
    // A value left partial (the optimal planner reduces it on the edge) is compared as the sum
    // (max, min) over its partial group: every piece must count exactly once.
    TensorValue got = values[rank][produced];
    if (layout.isPartial())
      for (int64_t member : groupAlongAxes(layout.mesh, rank, layout.partialAxes)) {
        if (member == rank) continue;
        const TensorValue& piece = values[member][produced];
        for (int64_t i = 0; i < got.size(); ++i) got.data[i] = combine(layout.partialOp, got.data[i], piece.data[i]);
      }
    for (int64_t i = 0; i < want.size(); ++i) {
      double a = got.data[i], b = want.data[i];
      if (sameSpecialValue(a, b)) continue;
      double abs = std::fabs(a - b), rel = abs / std::max(std::fabs(b), 1e-300);
      if (std::isfinite(abs)) {
        result.maxAbsError = std::max(result.maxAbsError, abs);
        if (std::fabs(b) > options.atol) result.maxRelError = std::max(result.maxRelError, rel);
      }
      if (abs <= options.atol + options.rtol * std::fabs(b) || !result.ok) continue;
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

VerifyResult simulateAndCompare(const Graph& original, const Graph& global, const std::map<int64_t, Graph>& locals,
                                const VerifyOptions& options) {
  VerifyResult result;
  // Every value of the single-device program is held in float64 (and a slice of it on every
  // rank): a program past the documented bound is refused, not allocated until memory runs out.
  if (int64_t elements = programElements(original); elements > options.maxElements) {
    result.ok = false;
    result.problem = fmt::format("the program's values hold {} elements; verify simulates at most {} (docs/limits.md)",
                                 elements, options.maxElements);
    return result;
  }
  try {
    std::vector<TensorValue> ref = referenceRun(original, options.seed);
    // Each rank's inputs and parameters: its slice of the reference values.
    std::map<int64_t, std::vector<TensorValue>> values;
    for (const auto& [rank, g] : locals) {
      auto& vals = values[rank];
      vals.resize(g.values.size());
      for (const auto* list : {&g.inputs, &g.parameters})
        for (ValueId v : *list) vals[v] = sliceOf(ref[v], g.value(v).slice);
    }
    std::map<ValueId, ValueId> check = valuesToCheck(global);
    // All ranks in lockstep, op by op; the collectives exchange data by their groups.
    for (OpId id : global.order) {
      const Op& gop = global.op(id);
      if (isCollective(gop)) {
        auto outs = runCollective(locals, id, values);
        for (auto& [rank, t] : outs) values[rank][gop.results[0]] = std::move(t);
      } else {
        for (const auto& [rank, g] : locals) {
          auto outs = runLocal(g, g.op(id), values[rank]);
          for (size_t r = 0; r < outs.size(); ++r) values[rank][gop.results[r]] = std::move(outs[r]);
        }
      }
      for (ValueId produced : gop.results) {
        auto it = check.find(produced);
        if (it == check.end()) continue;
        compareOnEveryRank(global, locals, ref, values, produced, it->second, options, result);
        if (!result.ok) return result;
      }
    }
  } catch (const ReferenceError& e) {
    result.ok = false;
    result.problem = e.what();
  }
  return result;
}

}  // namespace irc
