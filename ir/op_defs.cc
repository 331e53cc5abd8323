#include "ir/op_defs.h"

#include <algorithm>
#include <cmath>

namespace irc {
namespace {

OperandSpec tensor(std::string name) { return {std::move(name), OperandKind::Tensor, std::nullopt}; }
OperandSpec constant(std::string name, OperandKind kind, std::optional<Attribute> def = std::nullopt) {
  return {std::move(name), kind, std::move(def)};
}
AttrSpec attr(std::string name, AttrKind kind, std::optional<Attribute> def) {
  return {std::move(name), kind, std::move(def)};
}

std::vector<OpDef> buildOpDefs() {
  std::vector<OpDef> defs;
  const std::vector<AttrSpec> transposes = {attr("transpose_a", AttrKind::Bool, false),
                                            attr("transpose_b", AttrKind::Bool, false)};
  defs.push_back({"MatMul", OpFamily::MatMul, {tensor("x"), tensor("w")}, transposes});
  defs.push_back({"BatchMatMul", OpFamily::BatchMatMul, {tensor("x"), tensor("w")}, transposes});
  struct Binary {
    const char* type;
    BinaryKernel kernel;
    bool boolResult = false;  // comparisons and logical ops
  };
  const Binary binaries[] = {
      {"Add", [](double x, double y) { return x + y; }},
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
      {"LogicalOr", [](double x, double y) { return x != 0 || y != 0 ? 1.0 : 0.0; }, true}};
  for (const Binary& b : binaries) {
    defs.push_back({b.type, OpFamily::Broadcast, {tensor("x"), {"y", OperandKind::TensorOrScalar, std::nullopt}}, {}});
    defs.back().binary = b.kernel;
    defs.back().boolResult = b.boolResult;
  }
  // (irc) ONNX's Where: cond ? x : y elementwise, numpy broadcasting over all three; x or y may
  // be a scalar (the exporters' masked attention fills with a scalar).
  defs.push_back({"Select", OpFamily::Select,
                  {tensor("cond"), {"x", OperandKind::TensorOrScalar, std::nullopt}, {"y", OperandKind::TensorOrScalar, std::nullopt}},
                  {}});
  defs.push_back({"BiasAdd", OpFamily::BiasAdd, {tensor("x"), tensor("b")}, {}});
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
      // (irc) More of ONNX's elementwise ops, MindSpore's names: rotary embeddings (Sin, Cos),
      // rounding, Softplus (log(1 + e^x), computed without overflow) and LogicalNot of a mask.
      {"Sin", [](double x) { return std::sin(x); }},
      {"Cos", [](double x) { return std::cos(x); }},
      {"Floor", [](double x) { return std::floor(x); }},
      {"Ceil", [](double x) { return std::ceil(x); }},
      {"Softplus", [](double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }},
      {"LogicalNot", [](double x) { return x == 0 ? 1.0 : 0.0; }}};
  for (auto [t, kernel] : unaries) {
    defs.push_back({t, OpFamily::Unary, {tensor("x")}, {}});
    defs.back().unary = kernel;
  }
  defs.push_back({"Cast", OpFamily::Cast, {tensor("x"), constant("dtype", OperandKind::DTypeConst)}, {}});
  for (const char* t : {"Softmax", "LogSoftmax"})
    defs.push_back({t, OpFamily::Softmax, {tensor("x")}, {attr("axis", AttrKind::Int, int64_t{-1})}});
  defs.back().logarithmic = true;  // LogSoftmax
  const std::pair<const char*, Reduction> reductions[] = {
      {"ReduceSum", Reduction::Sum}, {"ReduceMean", Reduction::Mean}, {"ReduceMax", Reduction::Max}, {"ReduceMin", Reduction::Min}};
  for (auto [t, reduction] : reductions) {
    defs.push_back({t, OpFamily::Reduce, {tensor("x"), constant("axis", OperandKind::IntOrTuple, IntTuple{})},
                    {attr("keep_dims", AttrKind::Bool, false)}});
    defs.back().reduction = reduction;
  }
  defs.push_back({"Reshape", OpFamily::Reshape, {tensor("x"), constant("shape", OperandKind::Tuple)}, {}});
  defs.push_back({"Transpose", OpFamily::Transpose, {tensor("x"), constant("perm", OperandKind::Tuple)}, {}});
  defs.push_back({"ExpandDims", OpFamily::ExpandDims, {tensor("x"), constant("axis", OperandKind::Int)}, {}});
  defs.push_back({"Squeeze", OpFamily::Squeeze, {tensor("x")}, {attr("axis", AttrKind::IntOrTuple, IntTuple{})}});
  // (irc) MindSpore's Slice: x[begin : begin + size] on every dim (ONNX's Slice with steps 1).
  defs.push_back({"Slice", OpFamily::Slice,
                  {tensor("x"), constant("begin", OperandKind::Tuple), constant("size", OperandKind::Tuple)}, {}});
  // (irc) MindSpore's BroadcastTo: x broadcast to `shape` by numpy's rules (ONNX's Expand).
  defs.push_back({"BroadcastTo", OpFamily::BroadcastTo, {tensor("x"), constant("shape", OperandKind::Tuple)}, {}});
  defs.push_back({"Gather", OpFamily::Gather,
                  {tensor("params"), tensor("indices"), constant("axis", OperandKind::Int, int64_t{0})}, {}});
  defs.push_back({"Concat", OpFamily::Concat, {{"values", OperandKind::TensorList, std::nullopt}},
                  {attr("axis", AttrKind::Int, int64_t{0})}});
  defs.push_back({"Split", OpFamily::Split, {tensor("x")},
                  {attr("axis", AttrKind::Int, int64_t{0}), attr("output_num", AttrKind::Int, std::nullopt)}});
  defs.push_back({"LayerNorm", OpFamily::LayerNorm, {tensor("x"), tensor("gamma"), tensor("beta")},
                  {attr("begin_norm_axis", AttrKind::Int, int64_t{-1}),
                   attr("begin_params_axis", AttrKind::Int, int64_t{-1}),
                   attr("epsilon", AttrKind::Float, 1e-7)}});
  defs.push_back({"SoftmaxCrossEntropyWithLogits", OpFamily::SoftmaxCrossEntropy,
                  {tensor("logits"), tensor("labels")}, {}});
  defs.push_back({"OneHot", OpFamily::OneHot,
                  {tensor("indices"), constant("depth", OperandKind::Int),
                   {"on_value", OperandKind::TensorOrScalar, std::nullopt},
                   {"off_value", OperandKind::TensorOrScalar, std::nullopt}},
                  {attr("axis", AttrKind::Int, int64_t{-1})}});
  // (irc) ONNX's Trilu (causal masks): the elements on and above (Triu) or on and below (Tril)
  // the `diagonal`-th diagonal of the last two dims are kept, the others are 0.
  for (bool upper : {true, false}) {
    defs.push_back({upper ? "Triu" : "Tril", OpFamily::Triangle, {tensor("x")}, {attr("diagonal", AttrKind::Int, int64_t{0})}});
    defs.back().upper = upper;
  }
  // (irc) An ONNX node irc has no op for, kept with --opaque-unsupported: its ONNX type, its one
  // result's dtype and shape (from ONNX's shape inference); its operands and result are whole
  // on every rank, and the reference gives a placeholder result (docs/onnx.md).
  defs.push_back({"Opaque", OpFamily::Opaque, {{"inputs", OperandKind::TensorList, std::nullopt}},
                  {attr("op_type", AttrKind::String, std::nullopt), attr("dtype", AttrKind::String, std::nullopt),
                   attr("shape", AttrKind::IntOrTuple, std::nullopt)}});

  // Inserted by the passes (spec/ops.md, second table).
  const std::vector<AttrSpec> groupAttrs = {attr("group", AttrKind::String, std::nullopt),
                                            attr("group_ranks", AttrKind::String, std::nullopt)};
  auto with = [](std::vector<AttrSpec> base, std::vector<AttrSpec> more) {
    base.insert(base.end(), more.begin(), more.end());
    return base;
  };
  defs.push_back({"AllReduce", OpFamily::AllReduce, {tensor("x")},
                  with(groupAttrs, {attr("op", AttrKind::String, std::string("sum")),
                                    attr("fusion", AttrKind::Int, int64_t{0}), attr("index", AttrKind::Int, int64_t{0})}),
                  true});
  defs.push_back({"AllGather", OpFamily::AllGather, {tensor("x")},
                  with(groupAttrs, {attr("rank_size", AttrKind::Int, std::nullopt)}), true});
  defs.push_back({"ReduceScatter", OpFamily::ReduceScatter, {tensor("x")},
                  with(groupAttrs, {attr("op", AttrKind::String, std::string("sum")),
                                    attr("rank_size", AttrKind::Int, std::nullopt)}),
                  true});
  defs.push_back({"AlltoAll", OpFamily::AlltoAll, {tensor("x")},
                  with(groupAttrs, {attr("split_count", AttrKind::Int, std::nullopt),
                                    attr("split_dim", AttrKind::Int, std::nullopt),
                                    attr("concat_dim", AttrKind::Int, std::nullopt)}),
                  true});
  // MindSpore's _MirrorOperator: the identity in the forward graph; in the backward graph it
  // AllReduces (and averages, mean_flag) the parameter's gradient over the parameter's replica
  // group.
  defs.push_back({"_MirrorOperator", OpFamily::Mirror, {tensor("x")},
                  with(groupAttrs, {attr("dev_num", AttrKind::Int, std::nullopt), attr("mean_flag", AttrKind::Bool, true)}),
                  true});
  defs.push_back({"StridedSlice", OpFamily::StridedSlice,
                  {tensor("x"), constant("begin", OperandKind::Tuple), constant("end", OperandKind::Tuple),
                   constant("strides", OperandKind::Tuple)},
                  {attr("begin_mask", AttrKind::Int, int64_t{0}), attr("ellipsis_mask", AttrKind::Int, int64_t{0}),
                   attr("end_mask", AttrKind::Int, int64_t{0}), attr("new_axis_mask", AttrKind::Int, int64_t{0}),
                   attr("shrink_axis_mask", AttrKind::Int, int64_t{0})},
                  true});
  return defs;
}

}  // namespace

bool OpDef::hasAttr(std::string_view attrName) const {
  for (const auto& a : attrs)
    if (a.name == attrName) return true;
  return false;
}

const OperandSpec* OpDef::operand(std::string_view operandName) const {
  for (const auto& o : operands)
    if (o.name == operandName) return &o;
  return nullptr;
}

bool OpDef::tupleResult() const {
  return family == OpFamily::Split || family == OpFamily::LayerNorm || family == OpFamily::SoftmaxCrossEntropy;
}

const std::vector<OpDef>& allOpDefs() {
  static const std::vector<OpDef> defs = buildOpDefs();
  return defs;
}

namespace {

// The op-type index: open addressing over a power-of-two table at most a quarter full, keyed
// by FNV-1a of the name. Every op of a graph is looked up by every pass and every dump (a
// quarter of a million lookups on a 300-layer model): std::unordered_map's murmur hash and
// prime modulo made that 160 instructions a lookup, this about a third of it.
class OpTypeIndex {
 public:
  explicit OpTypeIndex(const std::vector<OpDef>& defs) {
    while (slots_.size() < defs.size() * 4) slots_.resize(slots_.size() * 2);
    for (const OpDef& d : defs) {
      size_t i = hash(d.type) & mask();
      while (slots_[i]) i = (i + 1) & mask();
      slots_[i] = &d;
    }
  }
  const OpDef* find(std::string_view type) const {
    for (size_t i = hash(type) & mask();; i = (i + 1) & mask()) {
      const OpDef* d = slots_[i];
      if (!d || d->type == type) return d;
    }
  }

 private:
  static size_t hash(std::string_view s) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 32));
  }
  size_t mask() const { return slots_.size() - 1; }
  std::vector<const OpDef*> slots_ = std::vector<const OpDef*>(64);
};

}  // namespace

const OpDef* findOpDef(std::string_view type) {
  static const OpTypeIndex index(allOpDefs());
  return index.find(type);
}

StrategyForm strategyFormOf(OpFamily family) {
  if (family == OpFamily::Reshape) return StrategyForm::FromNeighbours;
  if (family == OpFamily::OneHot) return StrategyForm::OnOutput;
  return StrategyForm::PerOperand;
}

bool ignoresConfiguredStrategy(OpFamily family) { return family == OpFamily::Cast; }

std::vector<std::string> modelOpTypeNames() {
  std::vector<std::string> names;
  for (const auto& d : allOpDefs())
    if (!d.insertedOnly) names.push_back(d.type);
  return names;
}

}  // namespace irc
