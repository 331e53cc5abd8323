// ReduceSum, ReduceMean, ReduceMax, ReduceMin: a reduced dim is a reduction factor (splitting it
// leaves the result partial, combined by the op's own reduction); ReduceMean divides the summed
// partial means by the group size.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferReduce(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  IntTuple axes = asTuple(*in[1].constant);
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n) return fail(fmt::format("axis {} is out of range for rank {} (valid: {} .. {})", a, rank, -rank, rank - 1), 1);
    if (reduced[*n]) return fail(fmt::format("axis {} is listed twice", a), 1);
    reduced[*n] = true;
  }
  bool keep = boolAttr(attrs, "keep_dims");
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i]) out.push_back(x.shape[i]);
    else if (keep) out.push_back(1);
  }
  return std::vector<TensorType>{{x.dtype, out}};
}

TensorValue reduce(Reduction reduction, const TensorValue& x, const IntTuple& axesIn, const Shape& outShape) {
  int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<bool> reduced(rank, axesIn.empty());
  for (int64_t a : axesIn) reduced[*normalizeAxis(a, rank)] = true;
  Shape kept;
  for (int64_t d = 0; d < rank; ++d) kept.push_back(reduced[d] ? 1 : x.shape[d]);
  TensorValue acc = TensorValue::zeros(kept);
  double init = reduction == Reduction::Max   ? -std::numeric_limits<double>::infinity()
                : reduction == Reduction::Min ? std::numeric_limits<double>::infinity()
                                              : 0.0;
  std::fill(acc.data.begin(), acc.data.end(), init);
  auto sk = stridesOf(kept), sx = stridesOf(x.shape);
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) count *= reduced[d] ? x.shape[d] : 1;
  forEach(x.shape, [&](const Index& idx) {
    Index k = idx;
    for (int64_t d = 0; d < rank; ++d)
      if (reduced[d]) k[d] = 0;
    double& a = acc.data[offsetOf(k, sk)];
    double v = x.data[offsetOf(idx, sx)];
    if (reduction == Reduction::Max) a = std::max(a, v);
    else if (reduction == Reduction::Min) a = std::min(a, v);
    else a += v;
  });
  if (reduction == Reduction::Mean)
    for (double& v : acc.data) v /= static_cast<double>(count);
  acc.shape = outShape;  // keep_dims only changes the shape: the data is the same
  return acc;
}

class Reduce : public OpFamilyRules {
 public:
  // A sum or mean spreads its gradient by shape alone; a max or min keeps where it was taken.
  SavedForBackward savedForBackward(const Op& op) const override {
    if (op.type == "ReduceSum" || op.type == "ReduceMean") return {};
    return {{0}, {0}, {}};
  }
  void define(std::vector<OpDef>& defs) const override {
    const std::pair<const char*, Reduction> reductions[] = {{"ReduceSum", Reduction::Sum},
                                                            {"ReduceMean", Reduction::Mean},
                                                            {"ReduceMax", Reduction::Max},
                                                            {"ReduceMin", Reduction::Min}};
    for (auto [t, reduction] : reductions) {
      defs.push_back({t,
                      OpFamily::Reduce,
                      {tensor("x"), constant("axis", OperandKind::IntOrTuple, IntTuple{})},
                      {attr("keep_dims", AttrKind::Bool, false)}});
      defs.back().reduction = reduction;
    }
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferReduce(in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {reduce(defOf(op).reduction, *in[0], asTuple(constantOf(op, 1)), results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.constants = {Attribute(int64_t{1})};
    s.note = "axis 1";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    const Shape& shape = in.operands[0].shape;
    int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<bool> reduced = namedDims(in.constants.at(0), rank);
    bool keep = std::get<bool>(in.attrs.at("keep_dims"));
    std::vector<int> f;
    DimFactors outDims;
    for (int64_t d = 0; d < rank; ++d) {
      f.push_back(b.factor(shape[d], reduced[d] ? FactorKind::Reduction : FactorKind::PassThrough));
      if (!reduced[d]) outDims.push_back({f.back()});
      else if (keep) outDims.push_back({});
    }
    if (in.def.reduction == Reduction::Max) b.rule.reduceOp = ReduceOp::Max;
    if (in.def.reduction == Reduction::Min) b.rule.reduceOp = ReduceOp::Min;
    b.rule.operands = {single(f)};
    b.rule.results = {outDims};
    return b.done();
  }
  std::string_view partialWhy() const override { return "splits a reduced dim"; }
  bool averagesPartials(const OpDef& def) const override { return def.reduction == Reduction::Mean; }
};

}  // namespace

const OpFamilyRules& reduce() {
  static const Reduce rules;
  return rules;
}

}  // namespace irc::families
