// Binary elementwise ops with numpy broadcasting (Add, Sub, Mul, RealDiv, Maximum, Minimum,
// Equal), and BiasAdd (a bias along dim 1).
#include <set>
#include <string_view>

#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferBroadcast(const OpDef& def, const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  TensorType y;
  if (in[1].tensor) {
    y = *in[1].tensor;
  } else {
    const auto& s = std::get<ScalarTensor>(*in[1].constant);
    y = {s.dtype, {}};
  }
  if (x.dtype != y.dtype)
    return fail(fmt::format("{} operands have different dtypes: {} and {}", def.type, modelName(x.dtype), modelName(y.dtype)), 1);
  auto out = broadcastShapes(x.shape, y.shape);
  if (!out)
    return fail(fmt::format("shapes {} and {} do not broadcast (numpy rules: trailing dims equal or 1)", formatShape(x.shape),
                            formatShape(y.shape)),
                1);
  return std::vector<TensorType>{{def.boolResult ? DType::Bool : x.dtype, *out}};
}

// Where's cond ? x : y: cond is Bool, x and y (either may be a scalar constant) share a dtype,
// and all three broadcast together.
InferResult inferSelect(const std::vector<InferOperand>& in) {
  std::vector<TensorType> types;
  for (const InferOperand& o : in)
    types.push_back(o.tensor ? *o.tensor : TensorType{std::get<ScalarTensor>(*o.constant).dtype, {}});
  if (types[0].dtype != DType::Bool) return fail(fmt::format("Select's cond must be bool; got {}", modelName(types[0].dtype)), 0);
  if (types[1].dtype != types[2].dtype)
    return fail(
        fmt::format("Select's x and y have different dtypes: {} and {}", modelName(types[1].dtype), modelName(types[2].dtype)),
        2);
  Shape out = types[0].shape;
  for (int i : {1, 2}) {
    auto both = broadcastShapes(out, types[i].shape);
    if (!both)
      return fail(fmt::format("shapes {} and {} do not broadcast (numpy rules: trailing dims equal or 1)", formatShape(out),
                              formatShape(types[i].shape)),
                  i);
    out = *both;
  }
  return std::vector<TensorType>{{types[1].dtype, out}};
}

InferResult inferBiasAdd(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  const TensorType& b = *in[1].tensor;
  if (x.shape.size() < 2) return fail(fmt::format("BiasAdd needs x of rank >= 2; got shape {}", formatShape(x.shape)), 0);
  if (b.shape.size() != 1 || b.shape[0] != x.shape[1])
    return fail(fmt::format("BiasAdd's bias must have shape ({}) (dim 1 of x); got {}", x.shape[1], formatShape(b.shape)), 1);
  if (x.dtype != b.dtype) return fail(fmt::format("operand dtypes differ: {} and {}", modelName(x.dtype), modelName(b.dtype)), 1);
  return std::vector<TensorType>{x};
}

TensorValue broadcastBinary(const Op& op, const KernelInputs& in, const Shape& outShape) {
  TensorValue y;
  if (in[1]) y = *in[1];
  else y = {{}, {std::get<ScalarTensor>(constantOf(op, 1)).value}};
  TensorValue out = TensorValue::zeros(outShape);
  auto sx = stridesOf(in[0]->shape), sy = stridesOf(y.shape);
  BinaryKernel kernel = defOf(op).binary;
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) { out.data[i++] = kernel(broadcastAt(*in[0], idx, sx), broadcastAt(y, idx, sy)); });
  return out;
}

TensorValue select(const Op& op, const KernelInputs& in, const Shape& outShape) {
  TensorValue operands[3];
  for (size_t k = 0; k < 3; ++k)
    operands[k] = in[k] ? *in[k] : TensorValue{{}, {std::get<ScalarTensor>(constantOf(op, k)).value}};
  TensorValue out = TensorValue::zeros(outShape);
  std::vector<int64_t> strides[3];
  for (size_t k = 0; k < 3; ++k) strides[k] = stridesOf(operands[k].shape);
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    bool cond = broadcastAt(operands[0], idx, strides[0]) != 0;
    out.data[i++] = cond ? broadcastAt(operands[1], idx, strides[1]) : broadcastAt(operands[2], idx, strides[2]);
  });
  return out;
}

// One factor per output dim; an operand dim of size 1 under a larger output dim has none (it
// broadcasts, so it must not be split).
// Made by a model op whose kernel takes a bias into its output: torch's addmm, convolutions.
bool madeByProduct(const Graph& g, ValueId v) {
  OpId producer = g.value(v).producer;
  if (producer == kNoId || g.op(producer).inserted()) return false;
  OpFamily f = familyOf(g.op(producer));
  return f == OpFamily::MatMul || f == OpFamily::BatchMatMul || f == OpFamily::Convolution || f == OpFamily::ConvTranspose;
}

class Broadcast : public OpFamilyRules {
 public:
  AttentionPart attentionPart(const Op&) const override { return AttentionPart::Elementwise; }
  // A bias or a norm's scale: a vector along the last dim of a tensor it is added to or scales
  // (a mask, a rotary table or a position embedding has more dims).
  bool operandIsWeight(const Graph& g, const Op& op, size_t operand) const override {
    const Shape& w = g.value(op.operands[operand].value).type.shape;
    if (w.size() != 1) return false;
    for (size_t j = 0; j < op.operands.size(); ++j) {
      if (j == operand || !op.operands[j].isValue()) continue;
      const Shape& x = g.value(op.operands[j].value).type.shape;
      if (x.size() >= 2 && x.back() == w[0]) return true;
    }
    return false;
  }
  // A Linear's bias added to its product (x @ w + b, the exporters' MatMul then Add).
  int accumulatesInto(const Graph& g, const Op& op) const override {
    if (op.type != "Add" || op.operands.size() != 2) return -1;
    for (int i : {0, 1}) {
      const Operand& product = op.operands[i];
      if (product.isValue() && op.operands[1 - i].isValue() && operandIsWeight(g, op, 1 - i) && madeByProduct(g, product.value))
        return i;
    }
    return -1;
  }
  // A Linear's bias added to its product; Gemm's alpha scaling it.
  ModulePart modulePart(const Op& op) const override {
    if (op.type == "Add") return {ModulePart::Kind::Bias, 0, 1};
    if (op.type == "Mul") return {ModulePart::Kind::Scale, 0, 1};
    return {};
  }
  // A sum keeps nothing, a product each factor another factor's gradient reads, a quotient its
  // divisor (and its dividend where the divisor takes a gradient), Maximum/Minimum/Pow their
  // tensor operands; comparisons and logic have no gradient.
  SavedForBackward savedForBackward(const Op& op) const override {
    static const std::set<std::string_view> keepInputs = {"Pow", "Maximum", "Minimum"};
    if (op.type == "Mul") return factorsSaved(op);
    // a / b: a's gradient reads b, b's reads a and b.
    if (op.type == "RealDiv" || op.type == "Div") {
      SavedForBackward saved;
      if (op.operands[1].isValue()) saved.operands.push_back(1);
      if (op.operands[0].isValue()) saved.forOtherOperands.push_back(0);
      return saved;
    }
    std::vector<int> tensors;
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (op.operands[i].isValue()) tensors.push_back(static_cast<int>(i));
    if (keepInputs.count(op.type)) return {tensors, {}, {}};
    return {};
  }
  // Operands broadcast from the right: every operand of the result's rank has its dim 0.
  bool passesBatchDim0(const Graph&, const Op&) const override { return true; }
  bool elementwiseForPropagation() const override { return true; }
  void define(std::vector<OpDef>& defs) const override {
    struct Binary {
      const char* type;
      BinaryKernel kernel;
      bool boolResult = false;  // comparisons and logical ops
    };
    const Binary binaries[] = {{"Add", [](double x, double y) { return x + y; }},
                               {"Sub", [](double x, double y) { return x - y; }},
                               {"Mul", [](double x, double y) { return x * y; }},
                               {"RealDiv", [](double x, double y) { return x / y; }},
                               {"Maximum", [](double x, double y) { return std::max(x, y); }},
                               {"Minimum", [](double x, double y) { return std::min(x, y); }},
                               // (irc) ONNX's Pow: the exporters' decomposed LayerNorm squares with Pow(x, 2).
                               {"Pow", [](double x, double y) { return std::pow(x, y); }},
                               {"Equal", [](double x, double y) { return x == y ? 1.0 : 0.0; }, true},
                               // (irc) ONNX's comparisons and logical ops, MindSpore's primitive names (masks are built
                               // from them).
                               {"Less", [](double x, double y) { return x < y ? 1.0 : 0.0; }, true},
                               {"Greater", [](double x, double y) { return x > y ? 1.0 : 0.0; }, true},
                               {"LessEqual", [](double x, double y) { return x <= y ? 1.0 : 0.0; }, true},
                               {"GreaterEqual", [](double x, double y) { return x >= y ? 1.0 : 0.0; }, true},
                               {"LogicalAnd", [](double x, double y) { return x != 0 && y != 0 ? 1.0 : 0.0; }, true},
                               {"LogicalOr", [](double x, double y) { return x != 0 || y != 0 ? 1.0 : 0.0; }, true},
                               // (irc) ONNX's Mod: FloorMod takes the divisor's sign (fmod=0, Python's %), Mod the
                               // dividend's (fmod=1, C's fmod); MindSpore's names.
                               {"FloorMod", [](double x, double y) { return x - std::floor(x / y) * y; }},
                               {"Mod", [](double x, double y) { return std::fmod(x, y); }}};
    for (const Binary& b : binaries) {
      defs.push_back({b.type, OpFamily::Broadcast, {tensor("x"), {"y", OperandKind::TensorOrScalar, std::nullopt}}, {}});
      defs.back().binary = b.kernel;
      defs.back().boolResult = b.boolResult;
      defs.back().scalarDtypeFrom = 0;
    }
  }
  InferResult inferTypes(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferBroadcast(def, in);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    TensorValue out = broadcastBinary(op, in, results[0].shape);
    // An integer result holds integers: RealDiv of ints truncates toward zero (C's and ONNX's
    // integer division); the other kernels give integers from integers anyway.
    if (isInteger(results[0].dtype))
      for (double& v : out.data) v = std::trunc(v);
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override { s.operands.push_back(s.operands[0]); }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const TensorType& result = in.results[0];
    RuleBuilder b;
    std::vector<int> f = b.factorsFor(result.shape);
    for (const TensorType& t : in.operands) {
      DimFactors dims;
      size_t offset = result.shape.size() - t.shape.size();
      for (size_t d = 0; d < t.shape.size(); ++d) {
        bool broadcasts = t.shape[d] == 1 && result.shape[offset + d] != 1;
        dims.push_back(broadcasts ? std::vector<int>{} : std::vector<int>{f[offset + d]});
      }
      b.rule.operands.push_back(dims);
    }
    b.rule.results.push_back(single(f));
    return b.done();
  }
};

class BiasAdd : public OpFamilyRules {
 public:
  // A Conv's or Linear's bias, added into its output.
  int accumulatesInto(const Graph& g, const Op& op) const override {
    return op.operands[0].isValue() && madeByProduct(g, op.operands[0].value) ? 0 : -1;
  }
  bool operandIsWeight(const Graph&, const Op&, size_t operand) const override { return operand == 1; }
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  bool elementwiseForPropagation() const override { return true; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"BiasAdd", OpFamily::BiasAdd, {tensor("x"), tensor("b")}, {}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferBiasAdd(in);
  }
  std::vector<TensorValue> evaluate(const Op&, const KernelInputs& in, const std::vector<TensorType>&) const override {
    TensorValue out = *in[0];
    int64_t i = 0;
    forEach(out.shape, [&](const Index& idx) { out.data[i++] += in[1]->data[idx[1]]; });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override { s.operands.push_back({DType::Float32, {8}}); }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    std::vector<int> f = b.factorsFor(in.operands[0].shape);
    b.rule.operands = {single(f), DimFactors{{f[1]}}};
    b.rule.results = {single(f)};
    return b.done();
  }
};

// (irc) ONNX's Where: cond ? x : y elementwise, numpy broadcasting over all three; x or y may be a
// scalar (the exporters' masked attention fills with a scalar). Its rule is Broadcast's.
class Select : public Broadcast {
 public:
  // The condition routes the gradient.
  SavedForBackward savedForBackward(const Op&) const override { return {{0}, {}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back(
        {"Select",
         OpFamily::Select,
         {tensor("cond"), {"x", OperandKind::TensorOrScalar, std::nullopt}, {"y", OperandKind::TensorOrScalar, std::nullopt}},
         {}});
    defs.back().scalarDtypeFrom = 1;
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferSelect(in);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {select(op, in, results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override { s.operands = {{DType::Bool, {8, 8}}, s.operands[0], s.operands[0]}; }
};

}  // namespace

const OpFamilyRules& broadcast() {
  static const Broadcast rules;
  return rules;
}

const OpFamilyRules& biasAdd() {
  static const BiasAdd rules;
  return rules;
}

const OpFamilyRules& select() {
  static const Select rules;
  return rules;
}

}  // namespace irc::families
