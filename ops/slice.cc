// Slice (x[begin : begin + size] per dim) and BroadcastTo (numpy broadcasting to a shape): the
// ops ONNX's Slice and Expand of computed tensors become.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferSlice(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  const auto& begin = std::get<IntTuple>(*in[1].constant);
  const auto& size = std::get<IntTuple>(*in[2].constant);
  size_t rank = x.shape.size();
  if (begin.size() != rank) return fail(fmt::format("begin has {} entries; x has rank {}", begin.size(), rank), 1);
  if (size.size() != rank) return fail(fmt::format("size has {} entries; x has rank {}", size.size(), rank), 2);
  for (size_t i = 0; i < rank; ++i)
    if (begin[i] < 0 || size[i] < 0 || begin[i] + size[i] > x.shape[i])
      return fail(fmt::format("dim {}: [{}, {} + {}) does not fit in size {} (begin >= 0, size >= 0, begin + size <= the dim)", i,
                              begin[i], begin[i], size[i], x.shape[i]),
                  begin[i] < 0 ? 1 : 2);
  return std::vector<TensorType>{{x.dtype, Shape(size.begin(), size.end())}};
}

InferResult inferBroadcastTo(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  const auto& shape = std::get<IntTuple>(*in[1].constant);
  Shape target(shape.begin(), shape.end());
  bool fits = target.size() >= x.shape.size();
  for (size_t i = 0; fits && i < x.shape.size(); ++i) {
    int64_t d = x.shape[x.shape.size() - 1 - i], t = target[target.size() - 1 - i];
    fits = d == t || d == 1;
  }
  for (int64_t d : target) fits = fits && d >= 0;
  if (!fits)
    return fail(fmt::format("x of shape {} does not broadcast to {} (numpy rules: each trailing dim equal or 1)",
                            formatShape(x.shape), formatShape(target)),
                1);
  return std::vector<TensorType>{{x.dtype, target}};
}

// A dim the op takes whole passes through (its slices are the output's slices); a dim it cuts
// is replicated on both sides: every rank cuts the same window from the whole dim.
class Slice : public OpFamilyRules {
 public:
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  // (irc) MindSpore's Slice: x[begin : begin + size] on every dim (ONNX's Slice with steps 1).
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Slice",
                    OpFamily::Slice,
                    {tensor("x"), constant("begin", OperandKind::Tuple), constant("size", OperandKind::Tuple)},
                    {}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferSlice(in);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    const auto& begin = std::get<IntTuple>(constantOf(op, 1));
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (size_t d = 0; d < begin.size(); ++d) ranges.emplace_back(begin[d], begin[d] + results[0].shape[d]);
    return {sliceOf(*in[0], ranges)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.constants = {Attribute(IntTuple{0, 2}), Attribute(IntTuple{8, 4})};
    s.note = "begin (0, 2), size (8, 4)";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& x = in.operands[0].shape;
    const Shape& out = in.results[0].shape;
    const auto& begin = std::get<IntTuple>(in.constants[0]);
    RuleBuilder b;
    DimFactors operand, result;
    for (size_t d = 0; d < x.size(); ++d) {
      if (begin[d] == 0 && out[d] == x[d]) {
        int f = b.factor(x[d]);
        operand.push_back({f});
        result.push_back({f});
      } else {
        operand.push_back({b.factor(x[d], FactorKind::Replicated)});
        result.push_back({b.factor(out[d], FactorKind::Replicated)});
      }
    }
    b.rule.operands = {operand};
    b.rule.results = {result};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a dim it slices a window from"; }
  // On a rank, a dim taken whole is the rank's slice of it: the size is the local output's.
  void localize(Op& op) const override {
    op.operands[2].constant = Attribute(IntTuple(op.parallel->outputLayouts[0].sliceShape()));
  }
};

// An output dim matching x's dim passes through; a dim x broadcasts (size 1) or lacks is the
// output's own factor: a rank makes its slice of the broadcast.
class BroadcastTo : public OpFamilyRules {
 public:
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  // (irc) MindSpore's BroadcastTo: x broadcast to `shape` by numpy's rules (ONNX's Expand).
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"BroadcastTo", OpFamily::BroadcastTo, {tensor("x"), constant("shape", OperandKind::Tuple)}, {}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferBroadcastTo(in);
  }
  std::vector<TensorValue> evaluate(const Op&, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    TensorValue out = TensorValue::zeros(results[0].shape);
    auto sx = stridesOf(in[0]->shape);
    int64_t i = 0;
    forEach(results[0].shape, [&](const Index& idx) { out.data[i++] = broadcastAt(*in[0], idx, sx); });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Float32, {1, 8}}};
    s.constants = {Attribute(IntTuple{8, 8})};
    s.note = "(1, 8) to (8, 8)";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& x = in.operands[0].shape;
    const Shape& out = in.results[0].shape;
    size_t offset = out.size() - x.size();
    RuleBuilder b;
    DimFactors operand(x.size()), result;
    for (size_t d = 0; d < out.size(); ++d) {
      int f = b.factor(out[d]);
      result.push_back({f});
      if (d >= offset && x[d - offset] == out[d]) operand[d - offset] = {f};
    }
    b.rule.operands = {operand};
    b.rule.results = {result};
    return b.done();
  }
  void localize(Op& op) const override {
    op.operands[1].constant = Attribute(IntTuple(op.parallel->outputLayouts[0].sliceShape()));
  }
};

}  // namespace

const OpFamilyRules& slice() {
  static const Slice rules;
  return rules;
}

const OpFamilyRules& broadcastTo() {
  static const BroadcastTo rules;
  return rules;
}

}  // namespace irc::families
