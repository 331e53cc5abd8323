// ONNX node -> irc ops, one mapper per ONNX op type (docs/onnx.md has the table). Mappers read
// attributes the way every opset from 13 to 18 writes them (an `axes` attribute or input), emit
// irc ops through NodeMapping::emit (which folds what has constant inputs), and fold the
// shape-only ops (Shape, Size, ConstantOfShape, Range, a strided Slice of a constant) themselves.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <fmt/format.h>

#include "frontends/onnx/onnx_graph_builder.h"
#include "frontends/onnx/onnx_tensors.h"
#include "ir/limits.h"
#include "ops/shape_inference.h"

namespace irc::onnx_import {
namespace {

using Terms = std::optional<std::vector<Term>>;

Terms one(std::optional<Term> t) {
  if (!t) return std::nullopt;
  return std::vector<Term>{*t};
}

std::optional<Term> need(NodeMapping& m, size_t i) {
  auto t = m.input(i);
  if (!t) m.error(fmt::format("needs input {}", i));
  return t;
}

Shape shapeOf(NodeMapping& m, const Term& t) { return m.typeOf(t).shape; }

IntTuple toInts(const TensorValue& v) {
  IntTuple out;
  for (double d : v.data) out.push_back(static_cast<int64_t>(d));
  return out;
}

TensorValue intVector(const IntTuple& values) {
  TensorValue v{{static_cast<int64_t>(values.size())}, {}};
  for (int64_t x : values) v.data.push_back(static_cast<double>(x));
  return v;
}

// A constant term in another dtype (ONNX's Pow takes an int exponent for a float base; irc's
// binary ops want one dtype).
std::optional<Term> withDType(NodeMapping& m, const Term& t, DType dtype) {
  if (m.typeOf(t).dtype == dtype || !t.isConstant()) return t;
  const TensorValue* data = m.dataOf(t);
  if (!data) return std::nullopt;
  TensorValue converted = *data;
  if (isInteger(dtype))
    for (double& v : converted.data) v = std::trunc(v);
  return m.constant({dtype, m.typeOf(t).shape}, converted, "cast");
}

// The `axes` of a reduction, Squeeze or Unsqueeze: an attribute before opset 13 (18 for the
// reductions but ReduceSum), an optional input after.
std::optional<IntTuple> axesOf(NodeMapping& m, size_t inputIndex, bool& given) {
  if (auto a = m.intsAttr("axes")) {
    given = true;
    return *a;
  }
  if (m.input(inputIndex)) {
    given = true;
    auto v = m.constantInput(inputIndex, "axes");
    if (!v) return std::nullopt;
    return toInts(*v);
  }
  given = false;
  return IntTuple{};
}

// ---- elementwise ----

template <const char* Type>
Terms unary(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  return one(m.emit1(Type, {*x}));
}

Terms binaryAs(NodeMapping& m, const std::string& type, bool commutative) {
  auto x = need(m, 0), y = need(m, 1);
  if (!x || !y) return std::nullopt;
  // irc's broadcast ops take a scalar constant as y only: put a constant second where order
  // does not matter.
  if (commutative && x->isConstant() && !y->isConstant()) std::swap(*x, *y);
  if (x->isConstant() != y->isConstant()) {
    std::optional<Term>& c = x->isConstant() ? x : y;
    c = withDType(m, *c, m.typeOf(x->isConstant() ? *y : *x).dtype);
    if (!c) return std::nullopt;
  }
  return one(m.emit1(type, {*x, *y}));
}

Terms add(NodeMapping& m) { return binaryAs(m, "Add", true); }
Terms sub(NodeMapping& m) { return binaryAs(m, "Sub", false); }
Terms mul(NodeMapping& m) { return binaryAs(m, "Mul", true); }
Terms div(NodeMapping& m) { return binaryAs(m, "RealDiv", false); }
// ONNX's Pow takes an exponent of any numeric type; irc's binary ops one dtype: a computed
// exponent of another type is cast to the base's first.
Terms pow(NodeMapping& m) {
  auto x = need(m, 0), y = need(m, 1);
  if (!x || !y) return std::nullopt;
  DType base = m.typeOf(*x).dtype;
  if (!x->isConstant() && !y->isConstant() && m.typeOf(*y).dtype != base) {
    auto cast = m.emit1("Cast", {*y, Attribute(base)}, {}, "Cast");
    if (!cast) return std::nullopt;
    return one(m.emit1("Pow", {*x, *cast}));
  }
  return binaryAs(m, "Pow", false);
}
Terms equal(NodeMapping& m) { return binaryAs(m, "Equal", true); }
// A comparison with a constant on the left is the mirrored comparison with it on the right
// (irc's broadcast ops take a scalar constant as y only).
template <const char* Type, const char* Mirrored>
Terms compare(NodeMapping& m) {
  auto x = m.input(0), y = m.input(1);
  if (x && y && x->isConstant() && !y->isConstant()) {
    auto c = withDType(m, *x, m.typeOf(*y).dtype);
    if (!c) return std::nullopt;
    return one(m.emit1(Mirrored, {*y, *c}));
  }
  return binaryAs(m, Type, false);
}
constexpr char kLess[] = "Less", kGreater[] = "Greater", kLessEqual[] = "LessEqual", kGreaterEqual[] = "GreaterEqual";
// Mod: fmod=0 (integers, Python's %) is FloorMod, fmod=1 (C's fmod) is Mod.
Terms mod(NodeMapping& m) { return binaryAs(m, m.intAttr("fmod", 0) != 0 ? "Mod" : "FloorMod", false); }
Terms logicalAnd(NodeMapping& m) { return binaryAs(m, "LogicalAnd", true); }
Terms logicalOr(NodeMapping& m) { return binaryAs(m, "LogicalOr", true); }

// Max and Min take any number of inputs: a chain of Maximum / Minimum.
// `lastRole` names the chain's last op ("": the node's own name).
Terms variadic(NodeMapping& m, const std::string& type, const std::string& lastRole = "") {
  auto acc = need(m, 0);
  for (size_t i = 1; acc && i < m.inputCount(); ++i) {
    auto next = need(m, i);
    if (!next) return std::nullopt;
    Term x = *acc, y = *next;
    if (x.isConstant() && !y.isConstant()) std::swap(x, y);
    acc = m.emit1(type, {x, y}, {}, i + 1 == m.inputCount() ? lastRole : fmt::format("{}{}", type, i));
  }
  return one(acc);
}
Terms max(NodeMapping& m) { return variadic(m, "Maximum"); }
Terms min(NodeMapping& m) { return variadic(m, "Minimum"); }
Terms sum(NodeMapping& m) { return variadic(m, "Add"); }
// Mean of n inputs: their sum times 1/n.
Terms mean(NodeMapping& m) {
  if (m.inputCount() == 1) return variadic(m, "Add");
  auto total = variadic(m, "Add", "sum");  // the node's name goes to the final Mul
  if (!total) return std::nullopt;
  Term t = total->front();
  return one(m.emit1("Mul", {t, Attribute(ScalarTensor{m.typeOf(t).dtype, 1.0 / static_cast<double>(m.inputCount())})}));
}

// Clip(x, min, max): Maximum with min, then Minimum with max (each optional; before opset 11
// they are attributes).
Terms clip(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  DType dt = m.typeOf(*x).dtype;
  // nullopt after an error; an empty Arg list when the bound is not given.
  auto bound = [&](size_t input, const char* attrName) -> std::optional<std::vector<Arg>> {
    if (m.opset() < 11) {
      if (!m.attr(attrName)) return std::vector<Arg>{};
      return std::vector<Arg>{Attribute(ScalarTensor{dt, m.floatAttr(attrName, 0)})};
    }
    auto t = m.input(input);
    if (!t) return std::vector<Arg>{};
    auto c = t->isConstant() ? withDType(m, *t, dt) : t;
    if (!c) return std::nullopt;
    return std::vector<Arg>{*c};
  };
  auto lo = bound(1, "min"), hi = bound(2, "max");
  if (!lo || !hi) return std::nullopt;
  if (lo->empty() && hi->empty()) return std::vector<Term>{*x};
  std::optional<Term> acc = *x;
  if (!lo->empty()) acc = m.emit1("Maximum", {*acc, lo->front()}, {}, hi->empty() ? "" : "min");
  if (acc && !hi->empty()) acc = m.emit1("Minimum", {*acc, hi->front()});
  return one(acc);
}

// LeakyRelu(x) = x for x >= 0, alpha x below: Maximum(x, alpha x) for alpha <= 1, Minimum above.
Terms leakyRelu(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  double alpha = m.floatAttr("alpha", 0.01);
  auto scaled = m.emit1("Mul", {*x, Attribute(ScalarTensor{m.typeOf(*x).dtype, alpha})}, {}, "alpha");
  if (!scaled) return std::nullopt;
  return one(m.emit1(alpha <= 1 ? "Maximum" : "Minimum", {*x, *scaled}));
}

// CastLike(x, like): Cast to like's dtype (opset 15; the dynamo exporter writes it for scalars).
Terms castLike(NodeMapping& m) {
  auto x = need(m, 0), like = need(m, 1);
  if (!x || !like) return std::nullopt;
  DType to = m.typeOf(*like).dtype;
  if (to == m.typeOf(*x).dtype) return std::vector<Term>{*x};
  return one(m.emit1("Cast", {*x, Attribute(to)}));
}

// A scalar constant of x's dtype.
Attribute scalarLike(NodeMapping& m, const Term& x, double value) { return Attribute(ScalarTensor{m.typeOf(x).dtype, value}); }

// HardSigmoid(x) = max(0, min(1, alpha x + beta)); HardSwish(x) = x HardSigmoid(x) with alpha 1/6, beta 1/2.
std::optional<Term> hardSigmoidOf(NodeMapping& m, const Term& x, double alpha, double beta, const std::string& role) {
  auto scaled = m.emit1("Mul", {x, scalarLike(m, x, alpha)}, {}, "alpha");
  auto shifted = scaled ? m.emit1("Add", {*scaled, scalarLike(m, x, beta)}, {}, "beta") : std::nullopt;
  auto low = shifted ? m.emit1("Maximum", {*shifted, scalarLike(m, x, 0)}, {}, "clip_low") : std::nullopt;
  return low ? m.emit1("Minimum", {*low, scalarLike(m, x, 1)}, {}, role) : std::nullopt;
}

Terms hardSigmoid(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  return one(hardSigmoidOf(m, *x, m.floatAttr("alpha", 0.2), m.floatAttr("beta", 0.5), ""));
}

Terms hardSwish(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto gate = hardSigmoidOf(m, *x, 1.0 / 6, 0.5, "gate");
  return gate ? one(m.emit1("Mul", {*x, *gate}, {}, "")) : std::nullopt;
}

// Softsign(x) = x / (1 + |x|).
Terms softsign(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto abs = m.emit1("Abs", {*x}, {}, "abs");
  auto denominator = abs ? m.emit1("Add", {*abs, scalarLike(m, *x, 1)}, {}, "one_plus") : std::nullopt;
  return denominator ? one(m.emit1("RealDiv", {*x, *denominator})) : std::nullopt;
}

// Mish(x) = x tanh(softplus(x)).
Terms mish(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto sp = m.emit1("Softplus", {*x}, {}, "softplus");
  auto t = sp ? m.emit1("Tanh", {*sp}, {}, "tanh") : std::nullopt;
  return t ? one(m.emit1("Mul", {*x, *t})) : std::nullopt;
}

// Elu(x) = x above 0, alpha (e^x - 1) else; Selu scales both sides by gamma.
std::optional<Term> eluOf(NodeMapping& m, const Term& x, double alpha, const std::string& role) {
  auto e = m.emit1("Exp", {x}, {}, "exp");
  auto em1 = e ? m.emit1("Sub", {*e, scalarLike(m, x, 1)}, {}, "expm1") : std::nullopt;
  auto neg = em1 ? m.emit1("Mul", {*em1, scalarLike(m, x, alpha)}, {}, "alpha") : std::nullopt;
  auto positive = neg ? m.emit1("Greater", {x, scalarLike(m, x, 0)}, {}, "positive") : std::nullopt;
  return positive ? m.emit1("Select", {*positive, x, *neg}, {}, role) : std::nullopt;
}

Terms elu(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  return one(eluOf(m, *x, m.floatAttr("alpha", 1.0), ""));
}

Terms selu(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto out = eluOf(m, *x, m.floatAttr("alpha", 1.67326319217681884765625), "elu");
  return out ? one(m.emit1("Mul", {*out, scalarLike(m, *x, m.floatAttr("gamma", 1.05070102214813232421875))})) : std::nullopt;
}

// PRelu(x, slope) = x above 0, slope x else (slope broadcasts against x).
Terms prelu(NodeMapping& m) {
  auto x = need(m, 0), slope = need(m, 1);
  if (!x || !slope) return std::nullopt;
  auto scaled = m.emit1("Mul", {*x, *slope}, {}, "slope");
  auto positive = scaled ? m.emit1("Greater", {*x, scalarLike(m, *x, 0)}, {}, "positive") : std::nullopt;
  return positive ? one(m.emit1("Select", {*positive, *x, *scaled})) : std::nullopt;
}

// Tile(x, repeats): x concatenated with itself `repeats[a]` times along each axis a (a constant).
Terms tile(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto repeats = m.constantInput(1, "repeats");
  if (!repeats) return std::nullopt;
  IntTuple r = toInts(*repeats);
  if (r.size() != shapeOf(m, *x).size()) {
    m.error(fmt::format("repeats {} has {} entries; x has rank {}", formatIntTuple(r), r.size(), shapeOf(m, *x).size()));
    return std::nullopt;
  }
  Term current = *x;
  for (size_t a = 0; a < r.size(); ++a) {
    if (r[a] < 1) {
      m.error(fmt::format("repeats {} has entry {} < 1 (irc holds no empty tensor)", formatIntTuple(r), r[a]));
      return std::nullopt;
    }
    if (r[a] == 1) continue;
    std::vector<Arg> copies(static_cast<size_t>(r[a]), current);
    auto next = m.emit1("Concat", std::move(copies), {{"axis", static_cast<int64_t>(a)}}, fmt::format("axis{}", a));
    if (!next) return std::nullopt;
    current = *next;
  }
  return std::vector<Term>{current};  // every repeat 1: x itself, as Identity
}

Terms where(NodeMapping& m) {
  auto c = need(m, 0), x = need(m, 1), y = need(m, 2);
  if (!c || !x || !y) return std::nullopt;
  return one(m.emit1("Select", {*c, *x, *y}));
}

constexpr char kSqrt[] = "Sqrt", kErf[] = "Erf", kTanh[] = "Tanh", kSigmoid[] = "Sigmoid", kExp[] = "Exp", kLog[] = "Log",
               kNeg[] = "Neg", kRelu[] = "ReLU", kAbs[] = "Abs", kSin[] = "Sin", kCos[] = "Cos", kFloor[] = "Floor",
               kCeil[] = "Ceil", kSoftplus[] = "Softplus", kNot[] = "LogicalNot", kIsNan[] = "IsNan", kSign[] = "Sign",
               kRound[] = "Round";

// Trilu(x, k): Triu or Tril (its `upper` attribute) with diagonal k. A k computed at run time
// (an offset read from a tensor) keeps x where column - row >= k (upper) or <= k (lower):
// Select(compare(offsets, k), x, 0) with the constant [rows, cols] grid of column - row.
Terms trilu(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  const bool upper = m.intAttr("upper", 1) != 0;
  if (auto k = m.input(1); k && !k->isConstant()) {
    const Shape xs = shapeOf(m, *x);
    if (xs.size() < 2 || m.typeOf(*k).shape.size() > 1 || (m.typeOf(*k).shape.size() == 1 && m.typeOf(*k).shape[0] != 1)) {
      m.error(fmt::format("takes x of rank >= 2 and one k; x has shape {}, k {}", formatShape(xs), formatShape(m.typeOf(*k).shape)));
      return std::nullopt;
    }
    const int64_t rows = xs[xs.size() - 2], cols = xs.back();
    TensorValue offsets{{rows, cols}, {}};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) offsets.data.push_back(static_cast<double>(c - r));
    Term grid = m.constant({m.typeOf(*k).dtype, {rows, cols}}, offsets, "offsets");
    std::optional<Term> kScalar = *k;
    if (!m.typeOf(*k).shape.empty()) kScalar = m.emit1("Reshape", {*k, Attribute(IntTuple{})}, {}, "k");
    if (!kScalar) return std::nullopt;
    auto keep = m.emit1(upper ? "GreaterEqual" : "LessEqual", {grid, *kScalar}, {}, "keep");
    if (!keep) return std::nullopt;
    return one(m.emit1("Select", {*keep, *x, Attribute(ScalarTensor{m.typeOf(*x).dtype, 0.0})}));
  }
  int64_t diagonal = 0;
  if (m.input(1)) {
    auto k = m.constantInput(1, "k");
    if (!k) return std::nullopt;
    if (k->data.size() != 1) {
      m.error(fmt::format("k has {} elements; Trilu's k is one number", k->data.size()));
      return std::nullopt;
    }
    diagonal = static_cast<int64_t>(k->data[0]);
  }
  return one(m.emit1(upper ? "Triu" : "Tril", {*x}, {{"diagonal", diagonal}}));
}

// Reciprocal: 1 / x as Pow(x, -1) (a float op in ONNX).
// IsInf detects both signs by default; irc's IsInf is that default.
Terms isInf(NodeMapping& m) {
  if (m.intAttr("detect_negative", 1) == 0 || m.intAttr("detect_positive", 1) == 0) {
    m.error("detects infinities of one sign only; irc maps IsInf with detect_negative=1 and detect_positive=1");
    return std::nullopt;
  }
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  return one(m.emit1("IsInf", {*x}));
}

Terms reciprocal(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  return one(m.emit1("Pow", {*x, Attribute(ScalarTensor{m.typeOf(*x).dtype, -1.0})}));
}

// Gelu (opset 20): the tanh approximation is MindSpore's GeLU, the exact form irc's ExactGeLU.
Terms gelu(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  return one(m.emit1(m.stringAttr("approximate", "none") == "tanh" ? "GeLU" : "ExactGeLU", {*x}));
}

Terms cast(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto to = dtypeOfOnnx(static_cast<int32_t>(m.intAttr("to", 0)));
  if (!to) {
    m.error(fmt::format("casts to {}, which irc does not hold", onnxTypeName(static_cast<int32_t>(m.intAttr("to", 0)))));
    return std::nullopt;
  }
  if (*to == m.typeOf(*x).dtype) return std::vector<Term>{*x};
  return one(m.emit1("Cast", {*x, Attribute(*to)}));
}

Terms identity(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  return std::vector<Term>{*x};
}

// Dropout at inference is the identity; its mask output (if asked for) is all true. In training
// mode it draws a random mask, which no compiler can reproduce.
Terms dropout(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  if (m.input(2)) {
    auto training = m.constantInput(2, "training_mode");
    if (!training) return std::nullopt;
    if (!training->data.empty() && training->data[0] != 0) {
      m.error("runs in training mode (a random mask); irc maps Dropout at inference, where it is the identity");
      return std::nullopt;
    }
  }
  std::vector<Term> out{*x};
  if (m.node().output_size() > 1) {
    TensorType maskType{DType::Bool, shapeOf(m, *x)};
    TensorValue ones = TensorValue::zeros(maskType.shape);
    std::fill(ones.data.begin(), ones.data.end(), 1.0);
    out.push_back(m.constant(maskType, ones, "mask"));
  }
  return out;
}

// ---- contractions ----

Terms matMul(NodeMapping& m) {
  auto a = need(m, 0), b = need(m, 1);
  if (!a || !b) return std::nullopt;
  Shape sa = shapeOf(m, *a), sb = shapeOf(m, *b);
  if (sa.empty() || sb.empty()) {
    m.error(fmt::format("multiplies a scalar (operand ranks {} and {}); MatMul takes tensors of rank >= 1", sa.size(), sb.size()));
    return std::nullopt;
  }
  if (sa.size() >= 2 && sb.size() >= 2) return one(m.emit1(sa.size() == 2 && sb.size() == 2 ? "MatMul" : "BatchMatMul", {*a, *b}));
  // numpy's vector operands: A (K) is the row (1, K), B (K) the column (K, 1); the dim added for
  // it is dropped from the product again (a Reshape on either side).
  std::optional<Term> lhs = *a, rhs = *b;
  if (sa.size() == 1) lhs = m.emit1("Reshape", {*a, Attribute(IntTuple{1, sa[0]})}, {}, "row");
  if (sb.size() == 1) rhs = m.emit1("Reshape", {*b, Attribute(IntTuple{sb[0], 1})}, {}, "column");
  if (!lhs || !rhs) return std::nullopt;
  size_t ra = std::max<size_t>(sa.size(), 2), rb = std::max<size_t>(sb.size(), 2);
  auto product = m.emit1(ra == 2 && rb == 2 ? "MatMul" : "BatchMatMul", {*lhs, *rhs});
  if (!product) return std::nullopt;
  Shape result = shapeOf(m, *product);
  if (sb.size() == 1) result.erase(result.end() - 1);
  if (sa.size() == 1) result.erase(result.end() - (sb.size() == 1 ? 1 : 2));
  return one(m.emit1("Reshape", {*product, Attribute(IntTuple(result.begin(), result.end()))}, {}, "vector"));
}

// Gemm: alpha * op(A) op(B) + beta * C, as MatMul (with its transposes), Mul and Add.
Terms gemm(NodeMapping& m) {
  auto a = need(m, 0), b = need(m, 1);
  if (!a || !b) return std::nullopt;
  AttrMap attrs{{"transpose_a", m.intAttr("transA", 0) != 0}, {"transpose_b", m.intAttr("transB", 0) != 0}};
  double alpha = m.floatAttr("alpha", 1.0), beta = m.floatAttr("beta", 1.0);
  auto c = m.input(2);
  DType dt = m.typeOf(*a).dtype;
  auto y = m.emit1("MatMul", {*a, *b}, attrs, c || alpha != 1.0 ? "" : "");
  if (y && alpha != 1.0) y = m.emit1("Mul", {*y, Attribute(ScalarTensor{dt, alpha})}, {}, "alpha");
  if (y && c) {
    std::optional<Term> bias = *c;
    if (beta != 1.0) bias = m.emit1("Mul", {*c, Attribute(ScalarTensor{dt, beta})}, {}, "beta");
    if (bias) y = m.emit1("Add", {*y, *bias}, {}, "bias");
  }
  return one(y);
}

// ---- normalizations and reductions ----

Terms softmaxAs(NodeMapping& m, const std::string& type) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  int64_t rank = static_cast<int64_t>(shapeOf(m, *x).size());
  int64_t axis = m.intAttr("axis", m.opset() >= 13 ? -1 : 1);
  auto n = normalizeAxis(axis, rank);
  if (m.opset() < 13 && n && *n != rank - 1) {
    m.error(fmt::format("before opset 13 {} flattens from axis {}; irc maps only the last axis there", m.node().op_type(), axis));
    return std::nullopt;
  }
  return one(m.emit1(type, {*x}, {{"axis", axis}}));
}
Terms softmax(NodeMapping& m) { return softmaxAs(m, "Softmax"); }
Terms logSoftmax(NodeMapping& m) { return softmaxAs(m, "LogSoftmax"); }

Terms layerNormalization(NodeMapping& m) {
  auto x = need(m, 0), scale = need(m, 1);
  if (!x || !scale) return std::nullopt;
  int64_t axis = m.intAttr("axis", -1);
  std::optional<Term> bias = m.input(2);
  if (!bias) {
    const TensorType& st = m.typeOf(*scale);
    bias = m.constant(st, TensorValue::zeros(st.shape), "zero_bias");
  }
  double epsilon = m.floatAttr("epsilon", 1e-5);
  auto out = m.emit("LayerNorm", {*x, *scale, *bias}, {{"begin_norm_axis", axis}, {"begin_params_axis", axis}, {"epsilon", epsilon}});
  if (!out) return std::nullopt;
  std::vector<Term> results{(*out)[0]};
  auto wanted = [&](int i) { return m.node().output_size() > i && !m.node().output(i).empty(); };
  // ONNX's Mean is LayerNorm's mean (both keep the normalized dims as 1s); its InvStdDev is
  // 1 / sqrt(variance + epsilon) of LayerNorm's population variance.
  if (wanted(1) || wanted(2)) results.push_back((*out)[1]);
  if (wanted(2)) {
    DType dt = m.typeOf((*out)[2]).dtype;
    auto shifted = m.emit1("Add", {(*out)[2], Attribute(ScalarTensor{dt, epsilon})}, {}, "variance_epsilon");
    if (!shifted) return std::nullopt;
    auto inverse = m.emit1("Pow", {*shifted, Attribute(ScalarTensor{dt, -0.5})}, {}, "inv_std_dev");
    if (!inverse) return std::nullopt;
    results.push_back(*inverse);
  }
  return results;
}

// ---- normalizations written as the ops they compute ----

// A per-channel [C] vector as [C, 1, ...] against an NC... tensor of `rank` dims.
std::optional<Term> perChannel(NodeMapping& m, const Term& v, size_t rank, const std::string& role) {
  IntTuple shape = {shapeOf(m, v).empty() ? 1 : shapeOf(m, v)[0]};
  shape.resize(std::max<size_t>(rank - 1, 1), 1);
  return m.emit1("Reshape", {v, Attribute(shape)}, {}, role);
}

// (x - mean) * (var + epsilon)^-0.5, the shared core of the normalizations: `centred` is x - mean.
std::optional<Term> normalized(NodeMapping& m, const Term& centred, const Term& var, double epsilon) {
  DType dt = m.typeOf(centred).dtype;
  auto shifted = m.emit1("Add", {var, Attribute(ScalarTensor{dt, epsilon})}, {}, "var_epsilon");
  if (!shifted) return std::nullopt;
  auto inverse = m.emit1("Pow", {*shifted, Attribute(ScalarTensor{dt, -0.5})}, {}, "inv_std");
  if (!inverse) return std::nullopt;
  return m.emit1("Mul", {centred, *inverse}, {}, "normalized");
}

// Mean and centred values of x over `axes` (kept), and the population variance.
struct Moments {
  Term centred, var;
};
std::optional<Moments> momentsOf(NodeMapping& m, const Term& x, const IntTuple& axes) {
  auto mean = m.emit1("ReduceMean", {x, Attribute(axes)}, {{"keep_dims", true}}, "mean");
  if (!mean) return std::nullopt;
  auto centred = m.emit1("Sub", {x, *mean}, {}, "centred");
  if (!centred) return std::nullopt;
  auto squared = m.emit1("Mul", {*centred, *centred}, {}, "squared");
  if (!squared) return std::nullopt;
  auto var = m.emit1("ReduceMean", {*squared, Attribute(axes)}, {{"keep_dims", true}}, "variance");
  if (!var) return std::nullopt;
  return Moments{*centred, *var};
}

// BatchNormalization at inference: x * a + b per channel, a = scale / sqrt(var + epsilon) and
// b = B - mean * a (constants fold, so a model's frozen statistics cost two ops).
Terms batchNormalization(NodeMapping& m) {
  auto x = need(m, 0), scale = need(m, 1), bias = need(m, 2), mean = need(m, 3), var = need(m, 4);
  if (!x || !scale || !bias || !mean || !var) return std::nullopt;
  if (m.intAttr("training_mode", 0) != 0 || (m.node().output_size() > 1 && !m.node().output(1).empty())) {
    m.error("runs in training mode (batch statistics); irc maps BatchNormalization at inference");
    return std::nullopt;
  }
  size_t rank = shapeOf(m, *x).size();
  if (rank < 2) {
    m.error(fmt::format("normalizes x of shape {}; it needs N and C", formatShape(shapeOf(m, *x))));
    return std::nullopt;
  }
  DType dt = m.typeOf(*x).dtype;
  auto shifted = m.emit1("Add", {*var, Attribute(ScalarTensor{dt, m.floatAttr("epsilon", 1e-5)})}, {}, "var_epsilon");
  if (!shifted) return std::nullopt;
  auto inverse = m.emit1("Pow", {*shifted, Attribute(ScalarTensor{dt, -0.5})}, {}, "inv_std");
  if (!inverse) return std::nullopt;
  auto a = m.emit1("Mul", {*scale, *inverse}, {}, "scale");
  if (!a) return std::nullopt;
  auto meanA = m.emit1("Mul", {*mean, *a}, {}, "mean_scale");
  if (!meanA) return std::nullopt;
  auto b = m.emit1("Sub", {*bias, *meanA}, {}, "shift");
  if (!b) return std::nullopt;
  auto ac = perChannel(m, *a, rank, "scale_c"), bc = perChannel(m, *b, rank, "shift_c");
  if (!ac || !bc) return std::nullopt;
  auto scaled = m.emit1("Mul", {*x, *ac}, {}, "scaled");
  if (!scaled) return std::nullopt;
  return one(m.emit1("Add", {*scaled, *bc}));
}

// InstanceNormalization: each (n, c) normalized over its spatial dims, then scale and B per channel.
Terms instanceNormalization(NodeMapping& m) {
  auto x = need(m, 0), scale = need(m, 1), bias = need(m, 2);
  if (!x || !scale || !bias) return std::nullopt;
  size_t rank = shapeOf(m, *x).size();
  if (rank < 3) {
    m.error(fmt::format("normalizes x of shape {}; it needs N, C and a spatial dim", formatShape(shapeOf(m, *x))));
    return std::nullopt;
  }
  IntTuple axes;
  for (size_t d = 2; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  auto moments = momentsOf(m, *x, axes);
  if (!moments) return std::nullopt;
  auto y = normalized(m, moments->centred, moments->var, m.floatAttr("epsilon", 1e-5));
  auto sc = perChannel(m, *scale, rank, "scale_c"), bc = perChannel(m, *bias, rank, "bias_c");
  if (!y || !sc || !bc) return std::nullopt;
  auto scaled = m.emit1("Mul", {*y, *sc}, {}, "scaled");
  if (!scaled) return std::nullopt;
  return one(m.emit1("Add", {*scaled, *bc}));
}

// GroupNormalization: x [N, C, ...] as [N, G, rest] normalized over rest; scale and bias per
// group (opset 18) or per channel (opset 21).
Terms groupNormalization(NodeMapping& m) {
  auto x = need(m, 0), scale = need(m, 1), bias = need(m, 2);
  if (!x || !scale || !bias) return std::nullopt;
  Shape xs = shapeOf(m, *x);
  int64_t groups = m.intAttr("num_groups", 0);
  if (xs.size() < 2 || groups < 1 || xs[1] % groups != 0) {
    m.error(fmt::format("has num_groups {}; it must divide the channels of x {}", groups, formatShape(xs)));
    return std::nullopt;
  }
  auto grouped = m.emit1("Reshape", {*x, Attribute(IntTuple{xs[0], groups, -1})}, {}, "grouped");
  if (!grouped) return std::nullopt;
  auto moments = momentsOf(m, *grouped, {2});
  if (!moments) return std::nullopt;
  auto y = normalized(m, moments->centred, moments->var, m.floatAttr("epsilon", 1e-5));
  if (!y) return std::nullopt;
  bool perGroup = shapeOf(m, *scale) == Shape{groups} && groups != xs[1];
  if (perGroup) {  // opset 18: per group, applied to [N, G, rest]
    auto sg = m.emit1("Reshape", {*scale, Attribute(IntTuple{groups, 1})}, {}, "scale_g");
    auto bg = m.emit1("Reshape", {*bias, Attribute(IntTuple{groups, 1})}, {}, "bias_g");
    if (!sg || !bg) return std::nullopt;
    auto scaled = m.emit1("Mul", {*y, *sg}, {}, "scaled");
    if (!scaled) return std::nullopt;
    auto shifted = m.emit1("Add", {*scaled, *bg}, {}, "shifted");
    if (!shifted) return std::nullopt;
    return one(m.emit1("Reshape", {*shifted, Attribute(IntTuple(xs.begin(), xs.end()))}));
  }
  auto back = m.emit1("Reshape", {*y, Attribute(IntTuple(xs.begin(), xs.end()))}, {}, "ungrouped");
  auto sc = perChannel(m, *scale, xs.size(), "scale_c"), bc = perChannel(m, *bias, xs.size(), "bias_c");
  if (!back || !sc || !bc) return std::nullopt;
  auto scaled = m.emit1("Mul", {*back, *sc}, {}, "scaled");
  if (!scaled) return std::nullopt;
  return one(m.emit1("Add", {*scaled, *bc}));
}

template <const char* Type>
Terms reduce(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  bool given = false;
  auto axes = axesOf(m, 1, given);
  if (!axes) return std::nullopt;
  if (axes->empty() && m.intAttr("noop_with_empty_axes", 0) != 0) return std::vector<Term>{*x};
  return one(m.emit1(Type, {*x, Attribute(*axes)}, {{"keep_dims", m.intAttr("keepdims", 1) != 0}}));
}
constexpr char kReduceMean[] = "ReduceMean", kReduceSum[] = "ReduceSum", kReduceMax[] = "ReduceMax",
               kReduceMin[] = "ReduceMin";

// ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp: ReduceSum between an
// elementwise op before it (Abs, x·x, Exp) and one after (Sqrt, Log), as torch.norm and logsumexp
// export. With noop_with_empty_axes and no axes only the elementwise ops remain.
enum class Before { None, Abs, Square, Exp };
enum class After { None, Sqrt, Log };
template <Before B, After A>
Terms sumBetween(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  bool given = false;
  auto axes = axesOf(m, 1, given);
  if (!axes) return std::nullopt;
  std::optional<Term> t = *x;
  if (B == Before::Abs) t = m.emit1("Abs", {*t}, {}, "abs");
  if (B == Before::Square) t = m.emit1("Mul", {*t, *t}, {}, "square");
  if (B == Before::Exp) t = m.emit1("Exp", {*t}, {}, "exp");
  if (!t) return std::nullopt;
  const bool noop = axes->empty() && m.intAttr("noop_with_empty_axes", 0) != 0;
  if (!noop) {
    t = m.emit1("ReduceSum", {*t, Attribute(*axes)}, {{"keep_dims", m.intAttr("keepdims", 1) != 0}}, A == After::None ? "" : "sum");
    if (!t) return std::nullopt;
  }
  if (A == After::Sqrt) t = m.emit1("Sqrt", {*t});
  if (A == After::Log) t = m.emit1("Log", {*t});
  return one(t);
}

// ---- convolution and pooling ----

// The pads of a Conv or pool node (the begins, then the ends): `pads`, or what `auto_pad` says
// (SAME_UPPER puts the odd one at the end, SAME_LOWER at the begin).
std::optional<IntTuple> padsOf(NodeMapping& m, const Shape& x, const IntTuple& kernel, const IntTuple& strides,
                               const IntTuple& dilations) {
  size_t spatial = kernel.size();
  std::string autoPad = m.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    IntTuple pads = m.intsAttr("pads").value_or(IntTuple(2 * spatial, 0));
    if (pads.size() != 2 * spatial) {
      m.error(fmt::format("has {} pads; {} spatial dims need {}", pads.size(), spatial, 2 * spatial));
      return std::nullopt;
    }
    return pads;
  }
  IntTuple pads(2 * spatial, 0);
  if (autoPad == "VALID") return pads;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER") {
    m.error(fmt::format("has auto_pad '{}'; valid: NOTSET, VALID, SAME_UPPER, SAME_LOWER", autoPad));
    return std::nullopt;
  }
  for (size_t d = 0; d < spatial; ++d) {
    int64_t in = x[d + 2], out = (in + strides[d] - 1) / strides[d];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in);
    int64_t small = total / 2, large = total - small;
    pads[d] = autoPad == "SAME_UPPER" ? small : large;
    pads[d + spatial] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

// An ints attribute of one entry per spatial dim, 1 each when absent.
std::optional<IntTuple> spatialInts(NodeMapping& m, const char* name, size_t spatial) {
  IntTuple v = m.intsAttr(name).value_or(IntTuple(spatial, 1));
  if (v.size() != spatial) {
    m.error(fmt::format("has {} {}; {} spatial dims need {}", v.size(), name, spatial, spatial));
    return std::nullopt;
  }
  return v;
}

// Conv: Conv1D/2D/3D, then a BiasAdd of B (MindSpore's nn.Conv2d: Conv2D + BiasAdd).
Terms conv(NodeMapping& m) {
  auto x = need(m, 0), w = need(m, 1);
  if (!x || !w) return std::nullopt;
  Shape xs = shapeOf(m, *x), ws = shapeOf(m, *w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size()) {
    m.error(fmt::format("convolves x of shape {} with w of shape {}; irc maps 1 to 3 spatial dims, x and w of one rank",
                        formatShape(xs), formatShape(ws)));
    return std::nullopt;
  }
  size_t spatial = xs.size() - 2;
  IntTuple kernel(ws.begin() + 2, ws.end());
  auto strides = spatialInts(m, "strides", spatial), dilations = spatialInts(m, "dilations", spatial);
  if (!strides || !dilations) return std::nullopt;
  auto pads = padsOf(m, xs, kernel, *strides, *dilations);
  if (!pads) return std::nullopt;
  AttrMap attrs{{"strides", *strides}, {"dilations", *dilations}, {"pads", *pads}, {"group", m.intAttr("group", 1)}};
  auto b = m.input(2);
  auto y = m.emit1(fmt::format("Conv{}D", spatial), {*x, *w}, std::move(attrs), b ? "conv" : "");
  if (!y || !b) return one(y);
  return one(m.emit1("BiasAdd", {*y, *b}));
}

// ConvTranspose: ConvTranspose1D/2D/3D, then BiasAdd of B (as Conv). `output_shape` (or auto_pad
// SAME_*: the output is stride * input) fixes the pads ONNX's way: the total padding, split
// evenly with the odd one at the end for SAME_UPPER, at the begin otherwise.
Terms convTranspose(NodeMapping& m) {
  auto x = need(m, 0), w = need(m, 1);
  if (!x || !w) return std::nullopt;
  Shape xs = shapeOf(m, *x), ws = shapeOf(m, *w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size()) {
    m.error(fmt::format("transposes a convolution of x of shape {} with w of shape {}; irc maps 1 to 3 spatial dims, x and w of "
                        "one rank",
                        formatShape(xs), formatShape(ws)));
    return std::nullopt;
  }
  size_t spatial = xs.size() - 2;
  auto strides = spatialInts(m, "strides", spatial), dilations = spatialInts(m, "dilations", spatial);
  if (!strides || !dilations) return std::nullopt;
  IntTuple outputPadding = m.intsAttr("output_padding").value_or(IntTuple(spatial, 0));
  if (outputPadding.size() != spatial) {
    m.error(fmt::format("has {} output_padding entries; {} spatial dims need {}", outputPadding.size(), spatial, spatial));
    return std::nullopt;
  }
  std::string autoPad = m.stringAttr("auto_pad", "NOTSET");
  auto outputShape = m.intsAttr("output_shape");
  IntTuple pads = m.intsAttr("pads").value_or(IntTuple(2 * spatial, 0));
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    IntTuple target;
    if (outputShape) {
      // output_shape may give the spatial dims only, or N and C too.
      target = outputShape->size() == spatial + 2 ? IntTuple(outputShape->begin() + 2, outputShape->end()) : *outputShape;
    } else {
      for (size_t d = 0; d < spatial; ++d) target.push_back(xs[d + 2] * (*strides)[d]);
    }
    if (target.size() != spatial) {
      m.error(fmt::format("has output_shape {}; {} spatial dims need {} entries", formatIntTuple(*outputShape), spatial, spatial));
      return std::nullopt;
    }
    pads.assign(2 * spatial, 0);
    for (size_t d = 0; d < spatial; ++d) {
      int64_t total = (*strides)[d] * (xs[d + 2] - 1) + outputPadding[d] + ((ws[d + 2] - 1) * (*dilations)[d] + 1) - target[d];
      // Python's floor division, as ONNX's reference: a negative total (an output wider than the
      // kernel reaches) gives negative pads, zeros added at the ends.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = autoPad == "SAME_UPPER";
      pads[d] = upper ? half : total - half;
      pads[d + spatial] = upper ? total - half : half;
    }
  } else if (autoPad != "NOTSET" && autoPad != "VALID") {
    m.error(fmt::format("has auto_pad '{}'; valid: NOTSET, VALID, SAME_UPPER, SAME_LOWER", autoPad));
    return std::nullopt;
  } else if (autoPad == "VALID") {
    pads.assign(2 * spatial, 0);
  }
  if (pads.size() != 2 * spatial) {
    m.error(fmt::format("has {} pads; {} spatial dims need {}", pads.size(), spatial, 2 * spatial));
    return std::nullopt;
  }
  AttrMap attrs{{"strides", *strides}, {"dilations", *dilations}, {"pads", pads}, {"output_padding", outputPadding},
                {"group", m.intAttr("group", 1)}};
  auto b = m.input(2);
  auto y = m.emit1(fmt::format("ConvTranspose{}D", spatial), {*x, *w}, std::move(attrs), b ? "conv" : "");
  if (!y || !b) return one(y);
  return one(m.emit1("BiasAdd", {*y, *b}));
}

// MaxPool and AveragePool: MaxPool or AvgPool (the Indices output and dilations are not mapped).
template <const char* Type>
Terms pooling(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  if (m.node().output_size() > 1 && !m.node().output(1).empty()) {
    m.error("asks for the Indices output; irc maps MaxPool's values only");
    return std::nullopt;
  }
  Shape xs = shapeOf(m, *x);
  auto kernel = m.intsAttr("kernel_shape");
  if (!kernel || xs.size() != kernel->size() + 2) {
    m.error(fmt::format("needs kernel_shape with one entry per spatial dim of x {}", formatShape(xs)));
    return std::nullopt;
  }
  size_t spatial = kernel->size();
  auto strides = spatialInts(m, "strides", spatial), dilations = spatialInts(m, "dilations", spatial);
  if (!strides || !dilations) return std::nullopt;
  if (std::any_of(dilations->begin(), dilations->end(), [](int64_t d) { return d != 1; })) {
    m.error(fmt::format("has dilations {}; irc maps pooling with dilations 1", formatIntTuple(*dilations)));
    return std::nullopt;
  }
  auto pads = padsOf(m, xs, *kernel, *strides, *dilations);
  if (!pads) return std::nullopt;
  AttrMap attrs{{"kernel_size", *kernel}, {"strides", *strides}, {"pads", *pads}, {"ceil_mode", m.intAttr("ceil_mode", 0) != 0}};
  if (std::string_view(Type) == "AvgPool") attrs["count_include_pad"] = m.intAttr("count_include_pad", 0) != 0;
  return one(m.emit1(Type, {*x}, std::move(attrs)));
}
constexpr char kMaxPool[] = "MaxPool", kAvgPool[] = "AvgPool";

// GlobalAveragePool, GlobalMaxPool: a ReduceMean / ReduceMax over the spatial dims, kept.
template <const char* Type>
Terms globalPool(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  IntTuple axes;
  for (size_t d = 2; d < shapeOf(m, *x).size(); ++d) axes.push_back(static_cast<int64_t>(d));
  return one(m.emit1(Type, {*x, Attribute(axes)}, {{"keep_dims", true}}));
}

// ---- data movement ----

Terms gather(NodeMapping& m) {
  auto data = need(m, 0), indices = need(m, 1);
  if (!data || !indices) return std::nullopt;
  int64_t axis = m.intAttr("axis", 0);
  int64_t rank = static_cast<int64_t>(shapeOf(m, *data).size());
  auto n = normalizeAxis(axis, rank);
  if (!n) {
    m.error(fmt::format("axis {} is out of range for data of rank {}", axis, rank));
    return std::nullopt;
  }
  // ONNX counts negative indices from the end; irc's Gather takes them in [0, dim): constant
  // indices are normalized here (computed ones are the model's to keep in range).
  if (indices->isConstant() && m.numbersKnown(*indices)) {
    auto values = m.constantInput(1, "indices");
    if (!values) return std::nullopt;
    int64_t dim = shapeOf(m, *data)[*n];
    for (double& v : values->data) {
      if (v < -dim || v >= dim) {
        m.error(fmt::format("index {} is out of range for dim {} of size {}", v, *n, dim));
        return std::nullopt;
      }
      if (v < 0) v += dim;
    }
    indices = m.constant(m.typeOf(*indices), *values, "indices");
  }
  return one(m.emit1("Gather", {*data, *indices, Attribute(*n)}));
}

// GatherElements, GatherND: the same ops (GatherND as MindSpore's GatherNd).
Terms gatherElements(NodeMapping& m) {
  auto data = need(m, 0), indices = need(m, 1);
  if (!data || !indices) return std::nullopt;
  return one(m.emit1("GatherElements", {*data, *indices}, {{"axis", m.intAttr("axis", 0)}}));
}

Terms gatherND(NodeMapping& m) {
  auto data = need(m, 0), indices = need(m, 1);
  if (!data || !indices) return std::nullopt;
  return one(m.emit1("GatherNd", {*data, *indices}, {{"batch_dims", m.intAttr("batch_dims", 0)}}));
}

// CumSum: the axis input must be a constant.
Terms cumSum(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto axis = m.constantInput(1, "axis");
  if (!axis) return std::nullopt;
  if (axis->data.size() != 1) {
    m.error(fmt::format("axis has {} elements; CumSum's axis is one number", axis->data.size()));
    return std::nullopt;
  }
  return one(m.emit1("CumSum", {*x, Attribute(static_cast<int64_t>(axis->data[0]))},
                     {{"exclusive", m.intAttr("exclusive", 0) != 0}, {"reverse", m.intAttr("reverse", 0) != 0}}));
}

// ArgMax, ArgMin: Argmax, Argmin (axis, keepdims, select_last_index).
template <const char* Type>
Terms argReduce(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  return one(m.emit1(Type, {*x}, {{"axis", m.intAttr("axis", 0)}, {"keep_dims", m.intAttr("keepdims", 1) != 0},
                                  {"select_last_index", m.intAttr("select_last_index", 0) != 0}}));
}
constexpr char kArgmax[] = "Argmax", kArgmin[] = "Argmin";

// TopK(x, K): TopK with k the constant K (irc's axis and largest for ONNX's), its indices cast
// from MindSpore's int32 to ONNX's int64.
Terms topK(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto k = m.constantInput(1, "K");
  if (!k) return std::nullopt;
  if (k->data.size() != 1) {
    m.error(fmt::format("K must hold one number; it has shape {}", formatShape(k->shape)));
    return std::nullopt;
  }
  auto out = m.emit("TopK", {*x, Attribute(static_cast<int64_t>(k->data[0]))},
                    {{"sorted", m.intAttr("sorted", 1) != 0}, {"axis", m.intAttr("axis", -1)}, {"largest", m.intAttr("largest", 1) != 0}});
  if (!out) return std::nullopt;
  auto indices = m.emit1("Cast", {(*out)[1], Attribute(DType::Int64)}, {}, "indices");
  if (!indices) return std::nullopt;
  return std::vector<Term>{(*out)[0], *indices};
}

// Pad: Pad with ONNX's pads [b0, b1, ..., a0, a1, ...] (over `axes` when given, opset 18) as
// (before, after) pairs, its mode (constant, reflect, edge, wrap) and the constant_value input
// (default 0).
Terms pad(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  std::string mode = m.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    m.error(fmt::format("pads in mode '{}'; valid: constant, reflect, edge, wrap", mode));
    return std::nullopt;
  }
  size_t rank = shapeOf(m, *x).size();
  IntTuple pads;
  if (m.opset() >= 11) {
    auto given = m.constantInput(1, "pads");
    if (!given) return std::nullopt;
    pads = toInts(*given);
  } else if (auto attr = m.intsAttr("pads")) {
    pads = *attr;
  }
  IntTuple axes;
  for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  if (m.input(3)) {
    auto given = m.constantInput(3, "axes");
    if (!given) return std::nullopt;
    axes = toInts(*given);
  }
  if (pads.size() != 2 * axes.size()) {
    m.error(fmt::format("pads {} must hold two entries per padded axis ({})", formatIntTuple(pads), axes.size()));
    return std::nullopt;
  }
  IntTuple paddings(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
    if (a < 0 || a >= static_cast<int64_t>(rank)) {
      m.error(fmt::format("axis {} is out of range for rank {}", axes[i], rank));
      return std::nullopt;
    }
    paddings[2 * a] = pads[i];
    paddings[2 * a + 1] = pads[i + axes.size()];
  }
  double value = m.opset() >= 11 ? 0.0 : m.floatAttr("value", 0.0);
  if (m.opset() >= 11 && m.input(2)) {
    auto given = m.constantInput(2, "constant_value");
    if (!given) return std::nullopt;
    if (!given->data.empty()) value = given->data[0];
  }
  return one(m.emit1("Pad", {*x}, {{"paddings", paddings}, {"value", value}, {"mode", mode}}));
}

// Einsum: the same op over its inputs.
Terms einsum(NodeMapping& m) {
  std::vector<Arg> args;
  for (size_t i = 0; i < m.inputCount(); ++i) {
    auto t = need(m, i);
    if (!t) return std::nullopt;
    args.push_back(*t);
  }
  return one(m.emit1("Einsum", std::move(args), {{"equation", m.stringAttr("equation", "")}}));
}

// ScatterElements, ScatterND (any reduction): ScatterElements, ScatterNd.
template <const char* Type>
Terms scatter(NodeMapping& m) {
  auto data = need(m, 0), indices = need(m, 1), updates = need(m, 2);
  if (!data || !indices || !updates) return std::nullopt;
  std::string reduction = m.stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min") {
    m.error(fmt::format("reduces its updates by '{}'; irc knows none, add, mul, max, min", reduction));
    return std::nullopt;
  }
  AttrMap attrs{{"reduction", reduction}};
  if (std::string_view(Type) == "ScatterElements") attrs["axis"] = m.intAttr("axis", 0);
  return one(m.emit1(Type, {*data, *indices, *updates}, std::move(attrs)));
}
constexpr char kScatterElements[] = "ScatterElements", kScatterNd[] = "ScatterNd";

Terms reshape(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto shapeValue = m.constantInput(1, "shape");
  if (!shapeValue) return std::nullopt;
  IntTuple target = toInts(*shapeValue);
  Shape in = shapeOf(m, *x);
  bool allowZero = m.intAttr("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1, total = 1;
  for (int64_t d : in) total *= d;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= in.size()) {
        m.error(fmt::format("shape entry {} is 0 (copy the input's dim) but the input has rank {}", i, in.size()));
        return std::nullopt;
      }
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (inferred >= 0) {
        m.error("the target shape has two -1 entries");
        return std::nullopt;
      }
      inferred = static_cast<int64_t>(i);
    } else if (target[i] < 0) {
      m.error(fmt::format("the target shape has the entry {}", target[i]));
      return std::nullopt;
    } else if (target[i] > 0 && known > kMaxTensorElements / target[i]) {
      // (known * target[i] would wrap around int64 before shape inference could say so.)
      m.error(fmt::format("the target shape {} has more than {} elements (docs/limits.md)", formatIntTuple(target),
                          kMaxTensorElements));
      return std::nullopt;
    } else {
      known *= target[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      m.error(fmt::format("cannot infer the -1 entry: {} elements do not divide into {}", total, known));
      return std::nullopt;
    }
    target[inferred] = total / known;
  }
  return one(m.emit1("Reshape", {*x, Attribute(target)}));
}

Terms flatten(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  Shape in = shapeOf(m, *x);
  // Flatten's axis is in [-rank, rank]: a negative one counts from the end of the input's dims.
  int64_t rank = static_cast<int64_t>(in.size()), given = m.intAttr("axis", 1);
  std::optional<int64_t> axis = given < 0 ? given + rank : given;
  if (*axis < 0 || *axis > rank) {
    m.error(fmt::format("axis {} is out of range for rank {} (valid: {} .. {})", given, rank, -rank, rank));
    return std::nullopt;
  }
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < in.size(); ++i) (static_cast<int64_t>(i) < *axis ? outer : inner) *= in[i];
  return one(m.emit1("Reshape", {*x, Attribute(IntTuple{outer, inner})}));
}

Terms transpose(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  IntTuple perm;
  if (auto p = m.intsAttr("perm")) {
    perm = *p;
  } else {
    for (int64_t d = static_cast<int64_t>(shapeOf(m, *x).size()) - 1; d >= 0; --d) perm.push_back(d);
  }
  return one(m.emit1("Transpose", {*x, Attribute(perm)}));
}

Terms concat(NodeMapping& m) {
  std::vector<Arg> args;
  for (size_t i = 0; i < m.inputCount(); ++i) {
    auto t = need(m, i);
    if (!t) return std::nullopt;
    if (!shapeOf(m, *t).empty() && [&] {
          int64_t n = 1;
          for (int64_t d : shapeOf(m, *t)) n *= d;
          return n;
        }() == 0)
      continue;  // exporters concatenate empty shape tensors; they add nothing
    args.push_back(*t);
  }
  if (args.size() == 1) return std::vector<Term>{std::get<Term>(args[0])};
  return one(m.emit1("Concat", std::move(args), {{"axis", m.intAttr("axis", 0)}}));
}

Terms split(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  int64_t outputs = m.node().output_size();
  int64_t axis = m.intAttr("axis", 0);
  std::optional<IntTuple> sizes = m.intsAttr("split");
  if (!sizes && m.input(1)) {
    auto v = m.constantInput(1, "split");
    if (!v) return std::nullopt;
    sizes = toInts(*v);
  }
  Shape shape = shapeOf(m, *x);
  auto dimIndex = normalizeAxis(axis, static_cast<int64_t>(shape.size()));
  if (!dimIndex) {
    m.error(fmt::format("axis {} is out of range for rank {}", axis, shape.size()));
    return std::nullopt;
  }
  const int64_t dim = shape[*dimIndex];
  if (!sizes && outputs > 0 && dim % outputs != 0) {
    // Opset 18's num_outputs on an indivisible dim: chunks of ceil(dim / n), the last smaller.
    int64_t chunk = (dim + outputs - 1) / outputs;
    sizes = IntTuple(outputs, chunk);
    sizes->back() = dim - chunk * (outputs - 1);
  }
  if (sizes) {
    int64_t total = 0;
    for (int64_t part : *sizes) total += part;
    if (static_cast<int64_t>(sizes->size()) != outputs || total != dim ||
        std::any_of(sizes->begin(), sizes->end(), [](int64_t part) { return part <= 0; })) {
      m.error(fmt::format("splits dim {} of size {} into parts {} for {} outputs", *dimIndex, dim, fmt::join(*sizes, ", "),
                          outputs));
      return std::nullopt;
    }
    bool equal = std::all_of(sizes->begin(), sizes->end(), [&](int64_t part) { return part == sizes->front(); });
    if (!equal) {
      // irc's Split makes equal parts: unequal ones are windows of the input, one Slice each
      // (`<node>/part<i>`).
      std::vector<Term> parts;
      int64_t offset = 0;
      for (size_t i = 0; i < sizes->size(); ++i) {
        IntTuple begin(shape.size(), 0), count(shape.begin(), shape.end());
        begin[*dimIndex] = offset;
        count[*dimIndex] = (*sizes)[i];
        offset += (*sizes)[i];
        auto part = m.emit1("Slice", {*x, Attribute(begin), Attribute(count)}, {}, fmt::format("part{}", i));
        if (!part) return std::nullopt;
        parts.push_back(*part);
      }
      return parts;
    }
  }
  return m.emit("Split", {*x}, {{"axis", axis}, {"output_num", outputs}});
}

// Unsqueeze: one ExpandDims per new axis, lowest first (each counted in the final rank).
Terms unsqueeze(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  bool given = false;
  auto axes = axesOf(m, 1, given);
  if (!axes) return std::nullopt;
  int64_t outRank = static_cast<int64_t>(shapeOf(m, *x).size() + axes->size());
  IntTuple sorted;
  for (int64_t a : *axes) {
    auto n = normalizeAxis(a, outRank);
    if (!n) {
      m.error(fmt::format("axis {} is out of range for the result's rank {}", a, outRank));
      return std::nullopt;
    }
    sorted.push_back(*n);
  }
  std::sort(sorted.begin(), sorted.end());
  std::optional<Term> acc = *x;
  for (size_t i = 0; acc && i < sorted.size(); ++i)
    acc = m.emit1("ExpandDims", {*acc, Attribute(sorted[i])}, {}, i + 1 == sorted.size() ? "" : fmt::format("ExpandDims{}", i));
  return one(acc);
}

Terms squeeze(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  bool given = false;
  auto axes = axesOf(m, 1, given);
  if (!axes) return std::nullopt;
  return one(m.emit1("Squeeze", {*x}, {{"axis", *axes}}));
}

// ---- constants and shape-only ops, folded here ----

Terms constantNode(NodeMapping& m) {
  const onnx::AttributeProto* a = nullptr;
  for (const char* key : {"value", "value_float", "value_floats", "value_int", "value_ints"})
    if ((a = m.attr(key))) break;
  if (!a) {
    m.error("has no value irc reads (value, value_float(s), value_int(s); sparse and string values are not held)");
    return std::nullopt;
  }
  TensorValue data;
  TensorType type;
  if (a->name() == "value") {
    std::string problem;
    auto t = typeOfTensor(a->t(), problem);
    auto v = t ? valueOfTensor(a->t(), problem) : std::nullopt;
    if (!v) {
      m.error(problem);
      return std::nullopt;
    }
    type = *t;
    data = *v;
  } else if (a->name() == "value_float") {
    type = {DType::Float32, {}};
    data = {{}, {a->f()}};
  } else if (a->name() == "value_int") {
    type = {DType::Int64, {}};
    data = {{}, {static_cast<double>(a->i())}};
  } else if (a->name() == "value_floats") {
    type = {DType::Float32, {a->floats_size()}};
    data = {type.shape, std::vector<double>(a->floats().begin(), a->floats().end())};
  } else {
    type = {DType::Int64, {a->ints_size()}};
    data = {type.shape, {}};
    for (int64_t v : a->ints()) data.data.push_back(static_cast<double>(v));
  }
  return std::vector<Term>{m.constant(type, data, "")};
}

Terms shape(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  Shape s = shapeOf(m, *x);
  int64_t rank = static_cast<int64_t>(s.size());
  auto clampAxis = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
  int64_t begin = clampAxis(m.intAttr("start", 0)), end = clampAxis(m.intAttr("end", rank));
  IntTuple dims(s.begin() + begin, s.begin() + std::max(begin, end));
  return std::vector<Term>{m.constant({DType::Int64, {static_cast<int64_t>(dims.size())}}, intVector(dims), "")};
}

Terms size(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : shapeOf(m, *x)) n *= d;
  return std::vector<Term>{m.constant({DType::Int64, {}}, {{}, {static_cast<double>(n)}}, "")};
}

Terms constantOfShape(NodeMapping& m) {
  auto dims = m.constantInput(0, "shape");
  if (!dims) return std::nullopt;
  TensorType type{DType::Float32, toInts(*dims)};
  double fill = 0;
  if (const auto* a = m.attr("value")) {
    std::string problem;
    auto t = typeOfTensor(a->t(), problem);
    auto v = t ? valueOfTensor(a->t(), problem) : std::nullopt;
    if (!v || v->data.size() != 1) {
      m.error(v ? "its value must hold one element" : problem);
      return std::nullopt;
    }
    type.dtype = t->dtype;
    fill = v->data[0];
  }
  TensorValue data = TensorValue::zeros(type.shape);
  std::fill(data.data.begin(), data.data.end(), fill);
  return std::vector<Term>{m.constant(type, data, "")};
}

// Range: folded. Its length is (limit - start) / delta, so a start, limit or delta computed at run
// time would give a tensor whose shape depends on values: not a static-shape program.
Terms range(NodeMapping& m) {
  for (size_t i = 0; i < 3; ++i)
    if (auto t = m.input(i); t && !t->isConstant()) {
      m.error(fmt::format("its input {} ('{}') is computed at run time, so its length would depend on values; irc compiles "
                          "static shapes (bind the dims it comes from with --dim, or compute it from shapes only)",
                          i, m.node().input(i)));
      return std::nullopt;
    }
  auto start = m.constantInput(0, "start"), limit = m.constantInput(1, "limit"), delta = m.constantInput(2, "delta");
  if (!start || !limit || !delta) return std::nullopt;
  double s = start->data.at(0), l = limit->data.at(0), d = delta->data.at(0);
  if (d == 0) {
    m.error("delta is 0");
    return std::nullopt;
  }
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)));
  TensorValue data{{n}, {}};
  for (int64_t i = 0; i < n; ++i) data.data.push_back(s + i * d);
  return std::vector<Term>{m.constant({m.typeOf(*m.input(0)).dtype, {n}}, data, "")};
}

// Slice: with steps of 1 irc's Slice(x, begin, size) (folded when x is constant: a mask buffer
// cut to the sequence length, a shape's tail); other steps of a constant folded here, of a
// computed tensor a Slice of its contiguous dims and a Gather per strided dim.
Terms slice(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto starts = m.constantInput(1, "starts"), ends = m.constantInput(2, "ends");
  if (!starts || !ends) return std::nullopt;
  Shape s = shapeOf(m, *x);
  int64_t rank = static_cast<int64_t>(s.size());
  IntTuple axes, steps(starts->data.size(), 1);
  if (m.input(3)) {
    auto a = m.constantInput(3, "axes");
    if (!a) return std::nullopt;
    axes = toInts(*a);
  } else {
    for (size_t i = 0; i < starts->data.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (m.input(4)) {
    auto st = m.constantInput(4, "steps");
    if (!st) return std::nullopt;
    steps = toInts(*st);
  }
  if (axes.size() != starts->data.size() || ends->data.size() != starts->data.size() || steps.size() != starts->data.size()) {
    m.error("starts, ends, axes and steps have different lengths");
    return std::nullopt;
  }
  std::vector<int64_t> begin(rank, 0), step(rank, 1), count(s.begin(), s.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = normalizeAxis(axes[i], rank);
    if (!axis || steps[i] == 0) {
      m.error(fmt::format("axis {} or step {} is out of range", axes[i], steps[i]));
      return std::nullopt;
    }
    int64_t dim = s[*axis], st = steps[i];
    // ONNX clamps starts and ends into the dim (INT64_MAX and INT64_MIN mean "to the end").
    auto clampIndex = [&](double v, int64_t lo, int64_t hi) {
      int64_t k = v < -9.2e18 ? -dim - 1 : v > 9.2e18 ? dim : static_cast<int64_t>(v);
      if (k < 0) k += dim;
      return std::clamp(k, lo, hi);
    };
    int64_t b = st > 0 ? clampIndex(starts->data[i], 0, dim) : clampIndex(starts->data[i], -1, dim - 1);
    int64_t e = st > 0 ? clampIndex(ends->data[i], 0, dim) : clampIndex(ends->data[i], -1, dim - 1);
    begin[*axis] = b;
    step[*axis] = st;
    count[*axis] = st > 0 ? std::max<int64_t>(0, (e - b + st - 1) / st) : std::max<int64_t>(0, (b - e - st - 1) / -st);
  }
  if (std::all_of(step.begin(), step.end(), [](int64_t st) { return st == 1; }))
    return one(m.emit1("Slice", {*x, Attribute(IntTuple(begin)), Attribute(IntTuple(count))}));
  if (!x->isConstant()) {
    // A strided slice of a computed tensor (GPT-J's rotate_every_two `x[..., ::2]`, Swin's
    // `x[:, 0::2, 0::2, :]`): the dims of step 1 as one Slice, then each strided dim as a Gather
    // of the positions it keeps (torch's index_select), which irc shards and verifies as any Gather.
    std::vector<int64_t> windowBegin(rank, 0), windowCount(s.begin(), s.end());
    bool window = false;
    for (int64_t d = 0; d < rank; ++d)
      if (step[d] == 1 && (begin[d] != 0 || count[d] != s[d])) {
        windowBegin[d] = begin[d];
        windowCount[d] = count[d];
        window = true;
      }
    std::optional<Term> current = *x;
    if (window) current = m.emit1("Slice", {*current, Attribute(IntTuple(windowBegin)), Attribute(IntTuple(windowCount))});
    for (int64_t d = 0; d < rank; ++d) {
      if (step[d] == 1) continue;
      TensorValue positions = TensorValue::zeros({count[d]});
      for (int64_t i = 0; i < count[d]; ++i) positions.data[i] = static_cast<double>(begin[d] + i * step[d]);
      if (!current) return std::nullopt;
      Term indices = m.constant({DType::Int64, {count[d]}}, positions, "positions");
      current = m.emit1("Gather", {*current, indices, Attribute(d)});
    }
    if (!current) return std::nullopt;
    return one(*current);
  }
  const TensorValue* data = m.dataOf(*x);
  if (!data) return std::nullopt;
  TensorValue out = TensorValue::zeros(count);
  auto strides = stridesOf(s);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < out.size(); ++k) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += (begin[d] + idx[d] * step[d]) * strides[d];
    out.data[k] = data->data[offset];
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < count[d]) break;
      idx[d] = 0;
    }
  }
  return std::vector<Term>{m.constant({m.typeOf(*x).dtype, count}, out, "")};
}

// Expand: irc's BroadcastTo to numpy's broadcast of x's shape and the requested one (ONNX's
// Expand broadcasts both ways: a requested 1 keeps x's dim).
Terms expand(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto requested = m.constantInput(1, "shape");
  if (!requested) return std::nullopt;
  Shape want = toInts(*requested), have = shapeOf(m, *x);
  Shape target(std::max(want.size(), have.size()));
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t a = i < have.size() ? have[have.size() - 1 - i] : 1, b = i < want.size() ? want[want.size() - 1 - i] : 1;
    if (a != b && a != 1 && b != 1) {
      m.error(fmt::format("x of shape {} does not broadcast with the shape {}", formatShape(have), formatShape(want)));
      return std::nullopt;
    }
    target[target.size() - 1 - i] = a == 1 ? b : a;
  }
  return one(m.emit1("BroadcastTo", {*x, Attribute(IntTuple(target))}));
}

// Resize (opset 11 on) and Upsample / Resize-10: irc's Resize to the output shape. The output
// shape is `sizes`, or each dim times its scale rounded down; irc's scale is output over input
// size, so a given scale must be that to float32's precision (a scale of 2 on a dim of 5 is
// 10 / 5; a scale of 1.5 on 5 would be 7 / 5 = 1.4 in irc: an error asking for sizes). opset 18's `axes` names the
// dims the scales or sizes are for. Before opset 11 the coordinates are asymmetric and nearest
// rounds down (onnxruntime's Upsample).
Terms resize(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  const bool legacy = m.node().op_type() == "Upsample" || m.opset() < 11;
  std::string mode = m.stringAttr("mode", "nearest");
  std::string coordinates = legacy ? "asymmetric" : m.stringAttr("coordinate_transformation_mode", "half_pixel");
  std::string nearest = legacy ? "floor" : m.stringAttr("nearest_mode", "round_prefer_floor");
  if (coordinates == "tf_crop_and_resize") {
    m.error("has coordinate_transformation_mode 'tf_crop_and_resize' (a crop by its roi); irc resizes whole dims");
    return std::nullopt;
  }
  if (m.intAttr("antialias", 0) != 0) {
    m.error("has antialias 1; irc resizes without an antialiasing filter");
    return std::nullopt;
  }
  if (std::string policy = m.stringAttr("keep_aspect_ratio_policy", "stretch"); policy != "stretch") {
    m.error(fmt::format("has keep_aspect_ratio_policy '{}'; irc resizes by the sizes as given (stretch)", policy));
    return std::nullopt;
  }
  if (mode == "linear" || mode == "bilinear" || mode == "trilinear") mode = "linear";  // Upsample-7's spellings
  const Shape in = shapeOf(m, *x);
  const int64_t rank = static_cast<int64_t>(in.size());
  IntTuple axes;
  if (auto given = m.intsAttr("axes")) {
    for (int64_t a : *given) {
      if (a < -rank || a >= rank) {
        m.error(fmt::format("axis {} is out of range for rank {}", a, rank));
        return std::nullopt;
      }
      axes.push_back(a < 0 ? a + rank : a);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const size_t scalesInput = legacy ? 1 : 2, sizesInput = 3;
  std::optional<TensorValue> scales, sizes;
  if (!legacy && m.input(sizesInput)) {
    sizes = m.constantInput(sizesInput, "sizes");
    if (!sizes) return std::nullopt;
    if (sizes->data.empty()) sizes.reset();
  }
  if (!sizes && m.input(scalesInput)) {
    scales = m.constantInput(scalesInput, "scales");
    if (!scales) return std::nullopt;
  } else if (!sizes && legacy && m.attr("scales")) {
    TensorValue v{{}, {}};
    for (float f : m.attr("scales")->floats()) v.data.push_back(f);
    v.shape = {static_cast<int64_t>(v.data.size())};
    scales = v;
  }
  const TensorValue* given = sizes ? &*sizes : scales ? &*scales : nullptr;
  if (!given || given->data.size() != axes.size()) {
    m.error(fmt::format("needs {} or sizes with one entry per resized dim ({}); it has {}", legacy ? "scales" : "scales",
                        axes.size(), given ? given->data.size() : 0));
    return std::nullopt;
  }
  IntTuple out(in.begin(), in.end());
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t d = axes[i];
    if (sizes) {
      out[d] = static_cast<int64_t>(sizes->data[i]);
      continue;
    }
    const double scale = scales->data[i];
    out[d] = static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * scale));
    if (out[d] < 1 || std::fabs(static_cast<double>(out[d]) - static_cast<double>(in[d]) * scale) > 1e-6 * static_cast<double>(out[d])) {
      m.error(fmt::format("scale {} of dim {} ({} elements) gives {} elements; irc resizes by output over input size, so "
                          "the scale must give a whole size (write the node with sizes instead)",
                          scale, d, in[d], static_cast<double>(in[d]) * scale));
      return std::nullopt;
    }
  }
  return one(m.emit1("Resize", {*x},
                     {{"sizes", out}, {"mode", mode}, {"coordinate_transformation_mode", coordinates}, {"nearest_mode", nearest},
                      {"cubic_coeff_a", m.floatAttr("cubic_coeff_a", -0.75)},
                      {"exclude_outside", m.intAttr("exclude_outside", 0) != 0}}));
}

// OneHot(indices, depth, values = [off, on], axis): irc's OneHot with depth and the two values
// constants (float indices cast to int64 first). ONNX counts a negative index from depth; irc's OneHot does not, so the indices are
// wrapped first by Select(indices < 0, indices + depth, indices) (folded for constant indices).
Terms oneHotNode(NodeMapping& m) {
  auto indices = need(m, 0);
  auto depth = m.constantInput(1, "depth"), values = m.constantInput(2, "values");
  if (!indices || !depth || !values) return std::nullopt;
  if (depth->data.size() != 1 || values->data.size() != 2) {
    m.error(fmt::format("depth has {} elements and values {}; OneHot takes one depth and values [off, on]", depth->data.size(),
                        values->data.size()));
    return std::nullopt;
  }
  const auto d = static_cast<int64_t>(depth->data[0]);
  const int64_t rank = static_cast<int64_t>(shapeOf(m, *indices).size());
  int64_t axis = m.intAttr("axis", -1);
  if (axis < -rank - 1 || axis > rank) {
    m.error(fmt::format("axis {} is out of range for indices of rank {} (valid: {} .. {})", axis, rank, -rank - 1, rank));
    return std::nullopt;
  }
  if (axis < 0) axis += rank + 1;
  if (axis == rank) axis = -1;
  if (!isInteger(m.typeOf(*indices).dtype)) {  // ONNX takes any numeric indices, cast to int64
    indices = m.emit1("Cast", {*indices, Attribute(DType::Int64)}, {}, "indices");
    if (!indices) return std::nullopt;
  }
  const DType indexType = m.typeOf(*indices).dtype, valueType = m.typeOf(*m.input(2)).dtype;
  auto negative = m.emit1("Less", {*indices, Attribute(ScalarTensor{indexType, 0.0})}, {}, "negative");
  auto shifted = m.emit1("Add", {*indices, Attribute(ScalarTensor{indexType, static_cast<double>(d)})}, {}, "shifted");
  if (!negative || !shifted) return std::nullopt;
  auto wrapped = m.emit1("Select", {*negative, *shifted, *indices}, {}, "wrapped");
  if (!wrapped) return std::nullopt;
  return one(m.emit1("OneHot", {*wrapped, Attribute(d), Attribute(ScalarTensor{valueType, values->data[1]}),
                                Attribute(ScalarTensor{valueType, values->data[0]})},
                     {{"axis", axis}}));
}

// DepthToSpace and SpaceToDepth (pixel shuffle): Reshape to 6 dims, Transpose, Reshape back, as
// ONNX defines them (DepthToSpace in DCR or CRD mode).
Terms depthSpace(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  const Shape xs = shapeOf(m, *x);
  const int64_t b = m.intAttr("blocksize", 0);
  const bool toSpace = m.node().op_type() == "DepthToSpace";
  if (xs.size() != 4 || b < 1 || (toSpace ? xs[1] % (b * b) != 0 : xs[2] % b != 0 || xs[3] % b != 0)) {
    m.error(fmt::format("has x of shape {} and blocksize {}; {} takes [N, C, H, W] with {} divisible by the blocksize{}",
                        formatShape(xs), b, m.node().op_type(), toSpace ? "C" : "H and W", toSpace ? " squared" : ""));
    return std::nullopt;
  }
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  IntTuple split, perm, merged;
  if (toSpace && m.stringAttr("mode", "DCR") == "CRD") {
    split = {n, c / (b * b), b, b, h, w}, perm = {0, 1, 4, 2, 5, 3}, merged = {n, c / (b * b), h * b, w * b};
  } else if (toSpace) {
    split = {n, b, b, c / (b * b), h, w}, perm = {0, 3, 4, 1, 5, 2}, merged = {n, c / (b * b), h * b, w * b};
  } else {
    split = {n, c, h / b, b, w / b, b}, perm = {0, 3, 5, 1, 2, 4}, merged = {n, c * b * b, h / b, w / b};
  }
  auto blocks = m.emit1("Reshape", {*x, Attribute(split)}, {}, "blocks");
  if (!blocks) return std::nullopt;
  auto moved = m.emit1("Transpose", {*blocks, Attribute(perm)}, {}, "moved");
  if (!moved) return std::nullopt;
  return one(m.emit1("Reshape", {*moved, Attribute(merged)}));
}

const std::unordered_map<std::string, NodeMapper>& mappers() {
  static const std::unordered_map<std::string, NodeMapper> table = {
      {"Add", add}, {"Sub", sub}, {"Mul", mul}, {"Div", div}, {"Pow", pow}, {"Equal", equal}, {"Max", max}, {"Min", min},
      {"Where", where}, {"Sqrt", unary<kSqrt>}, {"Erf", unary<kErf>}, {"Tanh", unary<kTanh>}, {"Sigmoid", unary<kSigmoid>},
      {"Exp", unary<kExp>}, {"Log", unary<kLog>}, {"Neg", unary<kNeg>}, {"Relu", unary<kRelu>}, {"Abs", unary<kAbs>}, {"Reciprocal", reciprocal},
      {"Sin", unary<kSin>}, {"Cos", unary<kCos>}, {"Floor", unary<kFloor>}, {"Ceil", unary<kCeil>},
      {"Softplus", unary<kSoftplus>}, {"Not", unary<kNot>}, {"Less", compare<kLess, kGreater>},
      {"Greater", compare<kGreater, kLess>}, {"LessOrEqual", compare<kLessEqual, kGreaterEqual>},
      {"GreaterOrEqual", compare<kGreaterEqual, kLessEqual>}, {"And", logicalAnd}, {"Or", logicalOr}, {"Sum", sum},
      {"Mean", mean}, {"Clip", clip}, {"LeakyRelu", leakyRelu}, {"Trilu", trilu},
      {"Gelu", gelu}, {"Cast", cast}, {"Identity", identity}, {"Dropout", dropout}, {"MatMul", matMul}, {"Gemm", gemm},
      {"Softmax", softmax}, {"LogSoftmax", logSoftmax}, {"LayerNormalization", layerNormalization},
      {"ReduceMean", reduce<kReduceMean>}, {"ReduceSum", reduce<kReduceSum>}, {"ReduceMax", reduce<kReduceMax>},
      {"ReduceMin", reduce<kReduceMin>}, {"ReduceL1", sumBetween<Before::Abs, After::None>},
      {"ReduceL2", sumBetween<Before::Square, After::Sqrt>}, {"ReduceSumSquare", sumBetween<Before::Square, After::None>},
      {"ReduceLogSum", sumBetween<Before::None, After::Log>}, {"ReduceLogSumExp", sumBetween<Before::Exp, After::Log>}, {"Gather", gather}, {"Reshape", reshape}, {"Flatten", flatten},
      {"Transpose", transpose}, {"Concat", concat}, {"Split", split}, {"Unsqueeze", unsqueeze}, {"Squeeze", squeeze},
      {"Constant", constantNode}, {"Shape", shape}, {"Size", size}, {"ConstantOfShape", constantOfShape},
      {"Range", range}, {"Slice", slice}, {"Expand", expand}, {"IsNaN", unary<kIsNan>}, {"IsInf", isInf},
      {"Sign", unary<kSign>}, {"Round", unary<kRound>}, {"Mod", mod}, {"Conv", conv}, {"ConvTranspose", convTranspose}, {"MaxPool", pooling<kMaxPool>},
      {"AveragePool", pooling<kAvgPool>}, {"GlobalAveragePool", globalPool<kReduceMean>},
      {"GlobalMaxPool", globalPool<kReduceMax>}, {"GatherElements", gatherElements}, {"GatherND", gatherND},
      {"CumSum", cumSum}, {"BatchNormalization", batchNormalization},
      {"InstanceNormalization", instanceNormalization}, {"GroupNormalization", groupNormalization},
      {"ArgMax", argReduce<kArgmax>}, {"ArgMin", argReduce<kArgmin>}, {"Einsum", einsum},
      {"ScatterElements", scatter<kScatterElements>}, {"ScatterND", scatter<kScatterNd>}, {"CastLike", castLike},
      {"HardSigmoid", hardSigmoid}, {"HardSwish", hardSwish}, {"Softsign", softsign}, {"Mish", mish}, {"Elu", elu},
      {"Selu", selu}, {"PRelu", prelu}, {"Tile", tile}, {"TopK", topK}, {"Pad", pad},
      {"Resize", resize}, {"Upsample", resize}, {"OneHot", oneHotNode},
      {"DepthToSpace", depthSpace}, {"SpaceToDepth", depthSpace}};
  return table;
}

}  // namespace

const NodeMapper* findMapper(const std::string& opType) {
  auto it = mappers().find(opType);
  return it == mappers().end() ? nullptr : &it->second;
}

}  // namespace irc::onnx_import

namespace irc {

const std::vector<std::string>& supportedOnnxOps() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, _] : onnx_import::mappers()) out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return names;
}

}  // namespace irc
