// Unary ops (ReLU, GeLU, Tanh, ...) and Cast: one factor per dim, in and out.
#include <set>
#include <string_view>

#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

TensorValue cast(const Op& op, const TensorValue& x) {
  TensorValue out = x;
  DType to = std::get<DType>(constantOf(op, 1));
  for (double& v : out.data) {
    if (to == DType::Bool) v = v != 0 ? 1.0 : 0.0;
    else if (isInteger(to)) v = std::trunc(v);
  }
  return out;
}

class Elementwise : public OpFamilyRules {
 public:
  AttentionPart attentionPart(const Op&) const override { return AttentionPart::Elementwise; }
  // Autograd keeps the result where the derivative is a function of it (ReLU, Sigmoid, Tanh,
  // Exp, Sqrt), nothing where it is constant or none exists, else the input.
  SavedForBackward savedForBackward(const Op& op) const override {
    static const std::set<std::string_view> ofResult = {"ReLU", "Sigmoid", "Tanh", "Exp", "Sqrt"};
    static const std::set<std::string_view> none = {"Neg", "Sign", "Round", "Floor", "Ceil", "LogicalNot", "IsNan", "IsInf"};
    if (ofResult.count(op.type)) return {{}, {0}, {}};
    if (none.count(op.type)) return {};
    return {{0}, {}, {}};
  }
  bool elementwiseForPropagation() const override { return true; }
  bool passesBatchDim0(const Graph&, const Op&) const override { return true; }
  void define(std::vector<OpDef>& defs) const override {
    const std::pair<const char*, UnaryKernel> unaries[] = {
        {"ReLU", [](double x) { return x > 0 ? x : 0.0; }},
        // MindSpore's GeLU is the tanh approximation.
        {"GeLU", [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
        {"Tanh", [](double x) { return std::tanh(x); }},
        {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
        {"Exp", [](double x) { return std::exp(x); }},
        {"Log", [](double x) { return std::log(x); }},
        {"Neg", [](double x) { return -x; }},
        {"Sqrt", [](double x) { return std::sqrt(x); }},
        {"Square", [](double x) { return x * x; }},
        {"Abs", [](double x) { return std::fabs(x); }},
        // (irc) The Gauss error function: exporters write the exact GeLU as 0.5x(1 + Erf(x/sqrt 2)).
        {"Erf", [](double x) { return std::erf(x); }},
        // (irc) The exact GeLU, x Phi(x) (torch's nn.GELU() and ONNX's Gelu by default), and SiLU,
        // x sigmoid(x) (MindSpore's SiLU, torch's nn.SiLU): the import fuses the exporters'
        // written-out forms (ops/activation_patterns.h), whose steps autograd would each keep.
        {"ExactGeLU", [](double x) { return 0.5 * x * std::erfc(-x * M_SQRT1_2); }},
        {"SiLU", [](double x) { return x / (1 + std::exp(-x)); }},
        // (irc) More of ONNX's elementwise ops, MindSpore's names: rotary embeddings (Sin, Cos),
        // rounding, Softplus (log(1 + e^x), computed without overflow) and LogicalNot of a mask.
        {"Sin", [](double x) { return std::sin(x); }},
        {"Cos", [](double x) { return std::cos(x); }},
        {"Floor", [](double x) { return std::floor(x); }},
        {"Ceil", [](double x) { return std::ceil(x); }},
        {"Softplus", [](double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }},
        {"LogicalNot", [](double x) { return x == 0 ? 1.0 : 0.0; }},
        // (irc) ONNX's Sign and Round (half to even, as numpy.round and ONNX say).
        {"Sign", [](double x) { return x > 0   ? 1.0
                                       : x < 0 ? -1.0
                                               : 0.0; }},
        {"Round", [](double x) { return std::nearbyint(x); }}};
    for (auto [t, kernel] : unaries) {
      defs.push_back({t, OpFamily::Unary, {tensor("x")}, {}});
      defs.back().unary = kernel;
    }
    // (irc) ONNX's IsNaN and IsInf (both signs): a bool mask of the same shape. The exporters'
    // scaled-dot-product attention guards its softmax with IsNaN/Where.
    const std::pair<const char*, UnaryKernel> tests[] = {{"IsNan", [](double x) { return std::isnan(x) ? 1.0 : 0.0; }},
                                                         {"IsInf", [](double x) { return std::isinf(x) ? 1.0 : 0.0; }}};
    for (auto [t, kernel] : tests) {
      defs.push_back({t, OpFamily::Unary, {tensor("x")}, {}});
      defs.back().unary = kernel;
      defs.back().boolResult = true;
    }
  }
  InferResult inferTypes(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap&) const override {
    if (def.boolResult) return std::vector<TensorType>{{DType::Bool, in[0].tensor->shape}};
    return std::vector<TensorType>{*in[0].tensor};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>&) const override {
    TensorValue out = *in[0];
    UnaryKernel kernel = defOf(op).unary;
    for (double& v : out.data) v = kernel(v);
    return {out};
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override { return sameShapeRule(in.operands[0].shape); }
};

// Cast: elementwise, and it follows its neighbours: a configured strategy is read but ignored.
class Cast : public Elementwise {
 public:
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Cast", OpFamily::Cast, {tensor("x"), constant("dtype", OperandKind::DTypeConst)}, {}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return std::vector<TensorType>{{std::get<DType>(*in[1].constant), in[0].tensor->shape}};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>&) const override {
    return {cast(op, *in[0])};
  }
  void sample(const OpDef&, OpSample& s) const override { s.constants = {Attribute(DType::Float16)}; }
  bool ignoresConfiguredStrategy() const override { return true; }
};

}  // namespace

const OpFamilyRules& elementwise() {
  static const Elementwise rules;
  return rules;
}

const OpFamilyRules& cast() {
  static const Cast rules;
  return rules;
}

}  // namespace irc::families
