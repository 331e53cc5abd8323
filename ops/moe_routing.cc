// MoeDispatch and MoeCombine (irc): a mixture-of-experts layer's token permutation into expert
// order and back, as GShard's dispatch and combine (Lepikhin et al. 2020, and MindSpore's MoE
// layer) compute them, but as the permutation they are rather than as a one-hot Einsum (whose
// FLOPs would be the tokens times the slots: Megatron's and torchtitan's dispatchers permute).
//
// Per group g (a sequence), its tokens in order and each token's k choices in order take the
// next free slot of their expert; a choice past the expert's `capacity` slots is dropped (its
// token gets nothing from that expert). MoeDispatch(x [G, S, H], indices [G, S, K]) writes each
// kept token into its slot of [G, E, C, H] (empty slots 0); MoeCombine(y [G, E, C, H], indices,
// weights [G, S, K]) gives each token the weighted sum of its kept slots' rows. With capacity
// T·K/E (balanced routing, the published benchmarks' forced balance) nothing is dropped when
// the router is balanced.
//
// The slots depend on every earlier token of the group: the sequence, the choices, the experts
// and the slots are needed whole; groups and the hidden dim pass through. Expert parallelism is
// the product over the experts that follows, split by its expert dim: the tokens move there by
// AlltoAll (dispatch's result G-split → E-split) and back.
#include <algorithm>

#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

// Calls `kept(row, token, slot)` for each kept choice, in token-major order: `row` the choice's
// offset in the [G, S, K] routing tensors, `token` its token's row of [G * S, H], `slot` its
// row of the slots [G * E * C, H]. A choice past its expert's capacity is dropped.
template <typename Kept>
void forEachKeptChoice(const Op& op, const TensorValue& indices, int64_t experts, int64_t capacity, Kept kept) {
  const int64_t G = indices.shape[0], S = indices.shape[1], K = indices.shape[2];
  std::vector<int64_t> filled(static_cast<size_t>(experts));
  for (int64_t g = 0; g < G; ++g) {
    std::fill(filled.begin(), filled.end(), 0);
    for (int64_t t = 0; t < S * K; ++t) {
      int64_t e = indexWithin(op, indices.data[g * S * K + t], experts);
      if (filled[e] < capacity) kept(g * S * K + t, g * S + t / K, (g * experts + e) * capacity + filled[e]++);
    }
  }
}

InferResult checkRouting(const TensorType& tokens, const TensorType& indices, int indicesOperand) {
  if (!isInteger(indices.dtype))
    return fail(fmt::format("indices must have an integer dtype; got {}", modelName(indices.dtype)), indicesOperand);
  if (indices.shape.size() != 3 || indices.shape[0] != tokens.shape[0] || indices.shape[1] != tokens.shape[1])
    return fail(fmt::format("indices {} must be [groups, tokens, k] over the tokens' [{}, {}]", formatShape(indices.shape),
                            tokens.shape[0], tokens.shape[1]),
                indicesOperand);
  return std::vector<TensorType>{};
}

class MoeDispatch : public OpFamilyRules {
 public:
  // Its backward gathers the slots' gradients back to the tokens: the indices alone.
  SavedForBackward savedForBackward(const Op&) const override { return {{1}, {}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"MoeDispatch",
                    OpFamily::MoeRouting,
                    {tensor("x"), tensor("indices")},
                    {attr("num_experts", AttrKind::Int, std::nullopt), attr("capacity", AttrKind::Int, std::nullopt)}});
    defs.back().notMindSporePrimitive = true;  // MindFormers' MoE dispatches inside its own cell
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    const TensorType& x = *in[0].tensor;
    if (x.shape.size() != 3) return fail(fmt::format("x must be [groups, tokens, hidden]; got {}", formatShape(x.shape)), 0);
    if (auto bad = checkRouting(x, *in[1].tensor, 1); std::holds_alternative<InferError>(bad)) return bad;
    int64_t experts = intAttr(attrs, "num_experts"), capacity = intAttr(attrs, "capacity");
    if (experts < 1) return fail(fmt::format("num_experts must be >= 1; got {}", experts), -1, "num_experts");
    if (capacity < 1) return fail(fmt::format("capacity must be >= 1; got {}", capacity), -1, "capacity");
    return std::vector<TensorType>{{x.dtype, {x.shape[0], experts, capacity, x.shape[2]}}};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    const TensorValue &x = *in[0], &indices = *in[1];
    const int64_t H = x.shape[2];
    TensorValue out = TensorValue::zeros(results[0].shape);
    forEachKeptChoice(op, indices, results[0].shape[1], results[0].shape[2], [&](int64_t, int64_t token, int64_t slot) {
      std::copy_n(x.data.begin() + token * H, H, out.data.begin() + slot * H);
    });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Float32, {2, 8, 4}}, {DType::Int32, {2, 8, 2}}};
    s.attrs["num_experts"] = int64_t{4};
    s.attrs["capacity"] = int64_t{4};
    s.note = "x (2, 8, 4), top-2 indices (2, 8, 2) over 4 experts of 4 slots";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape &x = in.operands[0].shape, &out = in.results[0].shape;
    RuleBuilder b;
    int g = b.factor(x[0]), s = b.factor(x[1], FactorKind::Replicated), h = b.factor(x[2]);
    int k = b.factor(in.operands[1].shape[2], FactorKind::Replicated);
    int e = b.factor(out[1], FactorKind::Replicated), c = b.factor(out[2], FactorKind::Replicated);
    b.rule.operands = {single({g, s, h}), single({g, s, k})};
    b.rule.results = {single({g, e, c, h})};
    b.rule.readByIndex = {s, k};  // the work is a copy per slot element, not per token and slot
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a dim the slots are counted along"; }
  int64_t indexBound(const Graph&, const Op& op, size_t operand) const override {
    return operand == 1 ? std::get<int64_t>(op.attrs.at("num_experts")) : -1;
  }
};

class MoeCombine : public OpFamilyRules {
 public:
  // d/dy needs the weights and indices; d/dweights the slots' rows.
  SavedForBackward savedForBackward(const Op&) const override { return {{0, 1, 2}, {}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"MoeCombine", OpFamily::MoeRouting, {tensor("y"), tensor("indices"), tensor("weights")}, {}});
    defs.back().notMindSporePrimitive = true;
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    const TensorType &y = *in[0].tensor, &indices = *in[1].tensor, &weights = *in[2].tensor;
    if (y.shape.size() != 4)
      return fail(fmt::format("y must be [groups, experts, capacity, hidden]; got {}", formatShape(y.shape)), 0);
    if (weights.shape.size() != 3 || weights.shape[0] != y.shape[0])
      return fail(
          fmt::format("weights must be [groups, tokens, k] over y's {} groups; got {}", y.shape[0], formatShape(weights.shape)),
          2);
    if (auto bad = checkRouting(weights, indices, 1); std::holds_alternative<InferError>(bad)) return bad;
    if (indices.shape != weights.shape)
      return fail(
          fmt::format("indices {} and weights {} must have one shape", formatShape(indices.shape), formatShape(weights.shape)),
          1);
    if (weights.dtype != y.dtype)
      return fail(fmt::format("operand dtypes differ: {} and {}", modelName(y.dtype), modelName(weights.dtype)), 2);
    return std::vector<TensorType>{{y.dtype, {y.shape[0], weights.shape[1], y.shape[3]}}};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    const TensorValue &y = *in[0], &indices = *in[1], &weights = *in[2];
    const int64_t H = y.shape[3];
    TensorValue out = TensorValue::zeros(results[0].shape);
    forEachKeptChoice(op, indices, y.shape[1], y.shape[2], [&](int64_t row, int64_t token, int64_t slot) {
      for (int64_t h = 0; h < H; ++h) out.data[token * H + h] += weights.data[row] * y.data[slot * H + h];
    });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Float32, {2, 4, 4, 8}}, {DType::Int32, {2, 8, 2}}, {DType::Float32, {2, 8, 2}}};
    s.note = "y (2, 4, 4, 8) of 4 experts' 4 slots, top-2 indices and weights (2, 8, 2)";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& y = in.operands[0].shape;
    RuleBuilder b;
    int g = b.factor(y[0]), e = b.factor(y[1], FactorKind::Replicated), c = b.factor(y[2], FactorKind::Replicated);
    int h = b.factor(y[3]);
    int s = b.factor(in.operands[1].shape[1], FactorKind::Replicated),
        k = b.factor(in.operands[1].shape[2], FactorKind::Replicated);
    b.rule.operands = {single({g, e, c, h}), single({g, s, k}), single({g, s, k})};
    b.rule.results = {single({g, s, h})};
    b.rule.readByIndex = {e, c, k};  // the work is a weighted sum per token and choice
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a dim the slots are counted along"; }
  int64_t indexBound(const Graph& graph, const Op& op, size_t operand) const override {
    return operand == 1 ? graph.value(op.operands[0].value).type.shape[1] : -1;
  }
};

}  // namespace

const OpFamilyRules& moeDispatch() {
  static const MoeDispatch rules;
  return rules;
}

const OpFamilyRules& moeCombine() {
  static const MoeCombine rules;
  return rules;
}

}  // namespace irc::families
