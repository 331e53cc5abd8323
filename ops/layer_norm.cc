// LayerNorm: the dims from begin_norm_axis on are normalized together and needed whole; gamma
// and beta cover them; mean and variance keep the leading dims.
#include "ops/shape_inference.h"
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferLayerNorm(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  auto bna = normalizeAxis(intAttr(attrs, "begin_norm_axis"), rank);
  if (!bna)
    return fail(fmt::format("begin_norm_axis {} is out of range for rank {}", intAttr(attrs, "begin_norm_axis"), rank), -1,
                "begin_norm_axis");
  auto bpa = normalizeAxis(intAttr(attrs, "begin_params_axis"), rank);
  if (!bpa || *bpa != *bna)
    return fail(fmt::format("begin_params_axis {} must equal begin_norm_axis {}", intAttr(attrs, "begin_params_axis"),
                            intAttr(attrs, "begin_norm_axis")),
                -1, "begin_params_axis");
  Shape paramShape(x.shape.begin() + *bna, x.shape.end());
  for (int i = 1; i <= 2; ++i) {
    const TensorType& p = *in[i].tensor;
    if (p.shape != paramShape)
      return fail(fmt::format("LayerNorm's {} must have shape {} (x's dims from begin_norm_axis {}); got {}",
                              i == 1 ? "gamma" : "beta", formatShape(paramShape), *bna, formatShape(p.shape)),
                  i);
    if (p.dtype != x.dtype)
      return fail(fmt::format("operand dtypes differ: {} and {}", modelName(x.dtype), modelName(p.dtype)), i);
  }
  Shape stat(x.shape.begin(), x.shape.begin() + *bna);
  stat.resize(rank, 1);
  return std::vector<TensorType>{x, {x.dtype, stat}, {x.dtype, stat}};
}

std::vector<TensorValue> layerNorm(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) {
  const TensorValue& x = *in[0];
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = *normalizeAxis(intAttr(op, "begin_norm_axis"), rank);
  double eps = std::get<double>(op.attrs.at("epsilon"));
  int64_t inner = 1;
  for (int64_t d = axis; d < rank; ++d) inner *= x.shape[d];
  int64_t outer = x.size() / inner;
  TensorValue y = TensorValue::zeros(x.shape), mean = TensorValue::zeros(results[1].shape),
              var = TensorValue::zeros(results[2].shape);
  for (int64_t o = 0; o < outer; ++o) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < inner; ++i) m += x.data[o * inner + i];
    m /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) v += (x.data[o * inner + i] - m) * (x.data[o * inner + i] - m);
    v /= static_cast<double>(inner);
    mean.data[o] = m;
    var.data[o] = v;
    for (int64_t i = 0; i < inner; ++i)
      y.data[o * inner + i] = (x.data[o * inner + i] - m) / std::sqrt(v + eps) * in[1]->data[i] + in[2]->data[i];
  }
  return {y, mean, var};
}

class LayerNorm : public OpFamilyRules {
 public:
  bool operandIsWeight(const Graph&, const Op&, size_t operand) const override { return operand >= 1; }
  // The input and its statistics (mean and variance results); gamma is a parameter.
  SavedForBackward savedForBackward(const Op& op) const override {
    SavedForBackward saved{{0}, {}, {}};
    for (int r = 1; r < static_cast<int>(op.results.size()); ++r) saved.results.push_back(r);
    return saved;
  }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"LayerNorm",
                    OpFamily::LayerNorm,
                    {tensor("x"), tensor("gamma"), tensor("beta")},
                    {attr("begin_norm_axis", AttrKind::Int, int64_t{-1}), attr("begin_params_axis", AttrKind::Int, int64_t{-1}),
                     attr("epsilon", AttrKind::Float, 1e-7)}});
    defs.back().results = 3;  // y, mean, variance
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferLayerNorm(in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return layerNorm(op, in, results);
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {s.operands[0], {DType::Float32, {8}}, {DType::Float32, {8}}};
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    const Shape& shape = in.operands[0].shape;
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t axis = *normalizeAxis(std::get<int64_t>(in.attrs.at("begin_norm_axis")), rank);
    std::vector<int> f;
    for (int64_t d = 0; d < rank; ++d)
      f.push_back(b.factor(shape[d], d >= axis ? FactorKind::Replicated : FactorKind::PassThrough));
    std::vector<int> trailing(f.begin() + axis, f.end()), leading(f.begin(), f.begin() + axis);
    b.rule.operands = {single(f), single(trailing), single(trailing)};
    DimFactors stat = single(leading);
    stat.resize(rank);
    b.rule.results = {single(f), stat, stat};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a normalized dim"; }
};

}  // namespace

const OpFamilyRules& layerNorm() {
  static const LayerNorm rules;
  return rules;
}

}  // namespace irc::families
