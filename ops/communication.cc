// The ops the passes insert (AllReduce, AllGather, ReduceScatter, AlltoAll, StridedSlice,
// _MirrorOperator): they carry their step (ir/redist_step.h) instead of a factor rule.
#include "ops/families.h"

namespace irc::families {
namespace {

// Communication ops: group membership is checked by the pass that builds them; here only the
// shape arithmetic.
InferResult inferCollective(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) {
  TensorType x = *in[0].tensor;
  switch (def.family) {
    case OpFamily::AllGather:
      if (x.shape.empty()) return fail("AllGather needs a tensor of rank >= 1", 0);
      x.shape[0] *= intAttr(attrs, "rank_size");
      break;
    case OpFamily::ReduceScatter: {
      int64_t n = intAttr(attrs, "rank_size");
      if (x.shape.empty() || n < 1 || x.shape[0] % n != 0)
        return fail(fmt::format("ReduceScatter over {} ranks cannot split dim 0 of {}", n, formatShape(x.shape)), 0);
      x.shape[0] /= n;
      break;
    }
    case OpFamily::AlltoAll: {
      int64_t n = intAttr(attrs, "split_count");
      auto sd = normalizeAxis(intAttr(attrs, "split_dim"), x.shape.size());
      auto cd = normalizeAxis(intAttr(attrs, "concat_dim"), x.shape.size());
      if (!sd || !cd || n < 1 || x.shape[*sd] % n != 0)
        return fail(fmt::format("AlltoAll split_count {} does not fit shape {}", n, formatShape(x.shape)), 0);
      x.shape[*sd] /= n;
      x.shape[*cd] *= n;
      break;
    }
    default: break;
  }
  return std::vector<TensorType>{x};
}

InferResult inferStridedSlice(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  const auto& begin = std::get<IntTuple>(*in[1].constant);
  const auto& end = std::get<IntTuple>(*in[2].constant);
  const auto& strides = std::get<IntTuple>(*in[3].constant);
  size_t rank = x.shape.size();
  if (begin.size() != rank || end.size() != rank || strides.size() != rank)
    return fail(fmt::format("StridedSlice bounds must have {} entries", rank), 1);
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (strides[i] != 1 || begin[i] < 0 || end[i] > x.shape[i] || begin[i] > end[i])
      return fail(fmt::format("StridedSlice bounds {}..{} do not fit shape {}", formatIntTuple(begin), formatIntTuple(end),
                              formatShape(x.shape)),
                  1);
    out[i] = end[i] - begin[i];
  }
  return std::vector<TensorType>{{x.dtype, out}};
}

TensorValue stridedSlice(const Op& op, const TensorValue& x) {
  const IntTuple& begin = std::get<IntTuple>(constantOf(op, 1));
  const IntTuple& end = std::get<IntTuple>(constantOf(op, 2));
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t d = 0; d < begin.size(); ++d) ranges.emplace_back(begin[d], end[d]);
  return sliceOf(x, ranges);
}

class Communication : public OpFamilyRules {
 public:
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  void define(std::vector<OpDef>& defs) const override {
    // Inserted by the passes (spec/ops.md, second table).
    const std::vector<AttrSpec> groupAttrs = {attr("group", AttrKind::String, std::nullopt),
                                              attr("group_ranks", AttrKind::String, std::nullopt)};
    auto with = [](std::vector<AttrSpec> base, std::vector<AttrSpec> more) {
      base.insert(base.end(), more.begin(), more.end());
      return base;
    };
    defs.push_back({"AllReduce",
                    OpFamily::AllReduce,
                    {tensor("x")},
                    with(groupAttrs, {attr("op", AttrKind::String, std::string("sum")), attr("fusion", AttrKind::Int, int64_t{0}),
                                      attr("index", AttrKind::Int, int64_t{0})}),
                    true});
    defs.push_back({"AllGather",
                    OpFamily::AllGather,
                    {tensor("x")},
                    with(groupAttrs, {attr("rank_size", AttrKind::Int, std::nullopt)}),
                    true});
    defs.push_back(
        {"ReduceScatter",
         OpFamily::ReduceScatter,
         {tensor("x")},
         with(groupAttrs, {attr("op", AttrKind::String, std::string("sum")), attr("rank_size", AttrKind::Int, std::nullopt)}),
         true});
    defs.push_back(
        {"AlltoAll",
         OpFamily::AlltoAll,
         {tensor("x")},
         with(groupAttrs, {attr("split_count", AttrKind::Int, std::nullopt), attr("split_dim", AttrKind::Int, std::nullopt),
                           attr("concat_dim", AttrKind::Int, std::nullopt)}),
         true});
    // MindSpore's _MirrorOperator: the identity in the forward graph; in the backward graph it
    // AllReduces (and averages, mean_flag) the parameter's gradient over the parameter's replica
    // group.
    defs.push_back({"_MirrorOperator",
                    OpFamily::Mirror,
                    {tensor("x")},
                    with(groupAttrs, {attr("dev_num", AttrKind::Int, std::nullopt), attr("mean_flag", AttrKind::Bool, true)}),
                    true});
  }
  InferResult inferTypes(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferCollective(def, in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    if (familyOf(op) == OpFamily::Mirror) return {*in[0]};  // the forward graph's identity
    return OpFamilyRules::evaluate(op, in, results);
  }
  std::optional<OpRule> rule(const RuleInputs&) const override { return std::nullopt; }
  // The mirror is the identity in the forward graph.
  RunsAs runsAs(const OpDef& def) const override {
    return def.family == OpFamily::Mirror ? RunsAs::EachRank : RunsAs::Collective;
  }
  // AllReduce and AllGather give every member the same result (one shared value); ReduceScatter
  // reduces once and gives each member its block of dim 0; AlltoAll gives member i block i of
  // every member's split dim, concatenated on the concat dim.
  std::vector<SharedValue> evaluateOnGroup(const RedistStep& step,
                                           const std::vector<const TensorValue*>& members) const override {
    const int64_t n = static_cast<int64_t>(members.size());
    auto shared = [](TensorValue t) { return std::make_shared<const TensorValue>(std::move(t)); };
    auto reduced = [&] {
      TensorValue acc = *members[0];
      for (int64_t k = 1; k < n; ++k)
        for (int64_t i = 0; i < acc.size(); ++i) acc.data[i] = reduceCombine(step.reduceOp, acc.data[i], members[k]->data[i]);
      return acc;
    };
    std::vector<SharedValue> out;
    switch (step.kind) {
      case RedistStep::Kind::AllReduce: return std::vector<SharedValue>(n, shared(reduced()));
      case RedistStep::Kind::Gather: return std::vector<SharedValue>(n, shared(concatAlong(members, 0)));
      case RedistStep::Kind::ReduceScatter: {
        TensorValue whole = reduced();
        for (int64_t me = 0; me < n; ++me) out.push_back(shared(blockAlong(whole, 0, n, me)));
        return out;
      }
      case RedistStep::Kind::AlltoAll:
        for (int64_t me = 0; me < n; ++me) {
          std::vector<TensorValue> received;
          for (const TensorValue* m : members) received.push_back(blockAlong(*m, step.dim, n, me));
          out.push_back(shared(concatAlong(received, step.concatDim)));
        }
        return out;
      default: return OpFamilyRules::evaluateOnGroup(step, members);
    }
  }
};

// The slice the redistribution pass inserts: each rank keeps its block [begin, end).
class StridedSlice : public Communication {
 public:
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"StridedSlice",
                    OpFamily::StridedSlice,
                    {tensor("x"), constant("begin", OperandKind::Tuple), constant("end", OperandKind::Tuple),
                     constant("strides", OperandKind::Tuple)},
                    {attr("begin_mask", AttrKind::Int, int64_t{0}), attr("ellipsis_mask", AttrKind::Int, int64_t{0}),
                     attr("end_mask", AttrKind::Int, int64_t{0}), attr("new_axis_mask", AttrKind::Int, int64_t{0}),
                     attr("shrink_axis_mask", AttrKind::Int, int64_t{0})},
                    true});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferStridedSlice(in);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>&) const override {
    return {stridedSlice(op, *in[0])};
  }
  RunsAs runsAs(const OpDef&) const override { return RunsAs::EachRank; }  // each rank its own block
};

}  // namespace

const OpFamilyRules& communication() {
  static const Communication rules;
  return rules;
}

const OpFamilyRules& stridedSlice() {
  static const StridedSlice rules;
  return rules;
}

}  // namespace irc::families
