#include "frontends/onnx/mapping/mapping_common.h"

namespace irc::onnx_import {
namespace {

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
      m.error(
          fmt::format("takes x of rank >= 2 and one k; x has shape {}, k {}", formatShape(xs), formatShape(m.typeOf(*k).shape)));
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

}  // namespace

void addElementwiseMappers(MapperTable& table) {
  table.insert({
      {"Add", add},
      {"Sub", sub},
      {"Mul", mul},
      {"Div", div},
      {"Pow", pow},
      {"Equal", equal},
      {"Max", max},
      {"Min", min},
      {"Where", where},
      {"Sqrt", unary<kSqrt>},
      {"Erf", unary<kErf>},
      {"Tanh", unary<kTanh>},
      {"Sigmoid", unary<kSigmoid>},
      {"Exp", unary<kExp>},
      {"Log", unary<kLog>},
      {"Neg", unary<kNeg>},
      {"Relu", unary<kRelu>},
      {"Abs", unary<kAbs>},
      {"Reciprocal", reciprocal},
      {"Sin", unary<kSin>},
      {"Cos", unary<kCos>},
      {"Floor", unary<kFloor>},
      {"Ceil", unary<kCeil>},
      {"Softplus", unary<kSoftplus>},
      {"Not", unary<kNot>},
      {"Less", compare<kLess, kGreater>},
      {"Greater", compare<kGreater, kLess>},
      {"LessOrEqual", compare<kLessEqual, kGreaterEqual>},
      {"GreaterOrEqual", compare<kGreaterEqual, kLessEqual>},
      {"And", logicalAnd},
      {"Or", logicalOr},
      {"Sum", sum},
      {"Mean", mean},
      {"Clip", clip},
      {"LeakyRelu", leakyRelu},
      {"Trilu", trilu},
      {"Gelu", gelu},
      {"Cast", cast},
      {"Identity", identity},
      {"Dropout", dropout},
      {"IsNaN", unary<kIsNan>},
      {"IsInf", isInf},
      {"Sign", unary<kSign>},
      {"Round", unary<kRound>},
      {"Mod", mod},
      {"CastLike", castLike},
      {"HardSigmoid", hardSigmoid},
      {"HardSwish", hardSwish},
      {"Softsign", softsign},
      {"Mish", mish},
      {"Elu", elu},
      {"Selu", selu},
      {"PRelu", prelu},
      {"Tile", tile},
  });
}

}  // namespace irc::onnx_import
