// ONNX ops irc has no op for, evaluated where an exporter leaves them on constants only: mask and
// index arithmetic over buffers and shapes (NonZero of a mask, Xor of two masks, EyeLike, a
// Compress of a position table, the ReduceProd of a shape), which a static-shape model computes
// once at import. Each folder
// reads its inputs' numbers and returns constants; a node of these types reading a computed tensor
// stays an error (irc has no op to run it on every rank).
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include <fmt/format.h>

#include "frontends/onnx/onnx_graph_builder.h"
#include "frontends/onnx/onnx_tensors.h"
#include "ops/reference_ops.h"
#include "ops/shape_inference.h"

namespace irc::onnx_import {
namespace {

using Terms = std::optional<std::vector<Term>>;

struct ConstantIn {
  TensorType type;
  TensorValue value;
};

std::optional<ConstantIn> in(NodeMapping& m, size_t i) {
  auto t = m.input(i);
  if (!t) {
    m.error(fmt::format("needs its input {}", i));
    return std::nullopt;
  }
  auto v = m.constantInput(i, "a constant");
  if (!v) return std::nullopt;
  return ConstantIn{m.typeOf(*t), std::move(*v)};
}

Terms result(NodeMapping& m, DType dtype, TensorValue value) {
  TensorType type{dtype, value.shape};
  return std::vector<Term>{m.constant(type, std::move(value), "")};
}

// ---- elementwise ----

using UnaryFn = double (*)(double x, NodeMapping& m);

template <UnaryFn Fn>
Terms unary(NodeMapping& m) {
  auto x = in(m, 0);
  if (!x) return std::nullopt;
  for (double& v : x->value.data) v = Fn(v, m);
  return result(m, x->type.dtype, std::move(x->value));
}

double tanOf(double x, NodeMapping&) { return std::tan(x); }
double asinOf(double x, NodeMapping&) { return std::asin(x); }
double acosOf(double x, NodeMapping&) { return std::acos(x); }
double atanOf(double x, NodeMapping&) { return std::atan(x); }
double sinhOf(double x, NodeMapping&) { return std::sinh(x); }
double coshOf(double x, NodeMapping&) { return std::cosh(x); }
double asinhOf(double x, NodeMapping&) { return std::asinh(x); }
double acoshOf(double x, NodeMapping&) { return std::acosh(x); }
double atanhOf(double x, NodeMapping&) { return std::atanh(x); }
double thresholdedRelu(double x, NodeMapping& m) { return x > m.floatAttr("alpha", 1.0) ? x : 0.0; }
double shrink(double x, NodeMapping& m) {
  double lambd = m.floatAttr("lambd", 0.5), bias = m.floatAttr("bias", 0.0);
  return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0;
}
double celu(double x, NodeMapping& m) {
  double alpha = m.floatAttr("alpha", 1.0);
  return std::max(0.0, x) + std::min(0.0, alpha * (std::exp(x / alpha) - 1));
}
double bitwiseNot(double x, NodeMapping&) { return static_cast<double>(~static_cast<int64_t>(x)); }

// Two operands broadcast numpy's way, fn on each pair of elements.
Terms binary(NodeMapping& m, DType resultDType, const std::function<double(double, double)>& fn) {
  auto a = in(m, 0), b = in(m, 1);
  if (!a || !b) return std::nullopt;
  auto shape = broadcastShapes(a->type.shape, b->type.shape);
  if (!shape) {
    m.error(fmt::format("shapes {} and {} do not broadcast", formatShape(a->type.shape), formatShape(b->type.shape)));
    return std::nullopt;
  }
  TensorValue out = TensorValue::zeros(*shape);
  auto sa = stridesOf(a->value.shape), sb = stridesOf(b->value.shape);
  int64_t i = 0;
  forEach(*shape, [&](const Index& idx) { out.data[i++] = fn(broadcastAt(a->value, idx, sa), broadcastAt(b->value, idx, sb)); });
  return result(m, resultDType, std::move(out));
}

Terms logicalXor(NodeMapping& m) {
  return binary(m, DType::Bool, [](double a, double b) { return static_cast<double>((a != 0) != (b != 0)); });
}

template <int Kind>  // 0 and, 1 or, 2 xor
Terms bitwise(NodeMapping& m) {
  auto t = m.input(0);
  if (!t) return std::nullopt;
  return binary(m, m.typeOf(*t).dtype, [](double a, double b) {
    int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
    return static_cast<double>(Kind == 0 ? (x & y) : Kind == 1 ? (x | y) : (x ^ y));
  });
}

Terms bitShift(NodeMapping& m) {
  std::string direction = m.stringAttr("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    m.error(fmt::format("has direction '{}'; valid: LEFT, RIGHT", direction));
    return std::nullopt;
  }
  auto t = m.input(0);
  if (!t) return std::nullopt;
  bool left = direction == "LEFT";
  return binary(m, m.typeOf(*t).dtype, [left](double a, double b) {
    auto x = static_cast<uint64_t>(a);
    auto s = static_cast<unsigned>(b);
    if (s >= 64) return 0.0;
    return static_cast<double>(left ? x << s : x >> s);
  });
}

// ---- index arithmetic ----

// NonZero: the indices of the non-zero elements, one row per dim (numpy.nonzero), int64.
Terms nonZero(NodeMapping& m) {
  auto x = in(m, 0);
  if (!x) return std::nullopt;
  const Shape& shape = x->value.shape;
  std::vector<Index> hits;
  int64_t i = 0;
  forEach(shape, [&](const Index& idx) {
    if (x->value.data[i++] != 0) hits.push_back(idx);
  });
  int64_t rank = static_cast<int64_t>(shape.size()), count = static_cast<int64_t>(hits.size());
  TensorValue out = TensorValue::zeros({rank, count});
  for (int64_t k = 0; k < count; ++k)
    for (int64_t d = 0; d < rank; ++d) out.data[d * count + k] = static_cast<double>(hits[k][d]);
  return result(m, DType::Int64, std::move(out));
}

// EyeLike: ones on diagonal k of a 2-d tensor of x's shape, in `dtype` (x's by default).
Terms eyeLike(NodeMapping& m) {
  auto x = in(m, 0);
  if (!x) return std::nullopt;
  if (x->value.shape.size() != 2) {
    m.error(fmt::format("takes a 2-d input; it has shape {}", formatShape(x->value.shape)));
    return std::nullopt;
  }
  DType dtype = x->type.dtype;
  if (const auto* a = m.attr("dtype")) {
    auto d = dtypeOfOnnx(static_cast<int32_t>(a->i()));
    if (!d) {
      m.error(fmt::format("asks for element type {}, which irc does not hold", onnxTypeName(static_cast<int32_t>(a->i()))));
      return std::nullopt;
    }
    dtype = *d;
  }
  int64_t k = m.intAttr("k", 0), rows = x->value.shape[0], cols = x->value.shape[1];
  TensorValue out = TensorValue::zeros(x->value.shape);
  for (int64_t r = 0; r < rows; ++r)
    if (r + k >= 0 && r + k < cols) out.data[r * cols + r + k] = 1.0;
  return result(m, dtype, std::move(out));
}

// Compress: the slices along `axis` whose condition is true (numpy.compress); without an axis,
// of the flattened input.
Terms compress(NodeMapping& m) {
  auto x = in(m, 0), condition = in(m, 1);
  if (!x || !condition) return std::nullopt;
  TensorValue data = x->value;
  int64_t axis = 0;
  if (m.attr("axis")) {
    auto normalized = normalizeAxis(m.intAttr("axis", 0), static_cast<int64_t>(data.shape.size()));
    if (!normalized) {
      m.error(fmt::format("axis {} is outside the input's {} dims", m.intAttr("axis", 0), data.shape.size()));
      return std::nullopt;
    }
    axis = *normalized;
  } else {
    data = reshaped(std::move(data), {data.size()});
  }
  std::vector<TensorValue> kept;
  int64_t length = data.shape[axis];
  for (int64_t i = 0; i < length && i < condition->value.size(); ++i)
    if (condition->value.data[i] != 0) kept.push_back(blockAlong(data, axis, length, i));
  if (kept.empty()) {
    Shape shape = data.shape;
    shape[axis] = 0;
    return result(m, x->type.dtype, TensorValue::zeros(shape));
  }
  return result(m, x->type.dtype, concatAlong(kept, axis));
}

// Hardmax: 1 at the first maximum along `axis` (opset 13; -1 by default), 0 elsewhere.
Terms hardmax(NodeMapping& m) {
  auto x = in(m, 0);
  if (!x) return std::nullopt;
  auto axis = normalizeAxis(m.intAttr("axis", -1), static_cast<int64_t>(x->value.shape.size()));
  if (!axis) {
    m.error(fmt::format("axis {} is outside the input's {} dims", m.intAttr("axis", -1), x->value.shape.size()));
    return std::nullopt;
  }
  TensorValue out = alongAxis(x->value, *axis, [](std::vector<double>& line) {
    size_t best = std::max_element(line.begin(), line.end()) - line.begin();
    std::fill(line.begin(), line.end(), 0.0);
    if (!line.empty()) line[best] = 1.0;
  });
  return result(m, x->type.dtype, std::move(out));
}

// ReduceProd: the product over `axes` (an attribute before opset 18, an input after; none: every
// dim unless noop_with_empty_axes), as a numel computed from a shape.
Terms reduceProd(NodeMapping& m) {
  auto x = in(m, 0);
  if (!x) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(x->value.shape.size());
  IntTuple axes;
  if (auto a = m.intsAttr("axes")) {
    axes = *a;
  } else if (m.input(1)) {
    auto given = in(m, 1);
    if (!given) return std::nullopt;
    for (double v : given->value.data) axes.push_back(static_cast<int64_t>(v));
  }
  if (axes.empty() && m.intAttr("noop_with_empty_axes", 0) != 0) return result(m, x->type.dtype, std::move(x->value));
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    auto d = normalizeAxis(a, rank);
    if (!d) {
      m.error(fmt::format("axis {} is outside the input's {} dims", a, rank));
      return std::nullopt;
    }
    reduced[*d] = true;
  }
  const bool keep = m.intAttr("keepdims", 1) != 0;
  Shape kept, out;
  for (int64_t d = 0; d < rank; ++d) {
    kept.push_back(reduced[d] ? 1 : x->value.shape[d]);
    if (!reduced[d] || keep) out.push_back(kept.back());
  }
  TensorValue product = TensorValue::zeros(kept);
  std::fill(product.data.begin(), product.data.end(), 1.0);
  const auto sk = stridesOf(kept);
  int64_t i = 0;
  forEach(x->value.shape, [&](const Index& idx) {
    int64_t at = 0;
    for (int64_t d = 0; d < rank; ++d) at += (reduced[d] ? 0 : idx[d]) * sk[d];
    product.data[at] *= x->value.data[i++];
  });
  return result(m, x->type.dtype, reshaped(std::move(product), out));
}

const std::unordered_map<std::string, NodeMapper>& folders() {
  static const std::unordered_map<std::string, NodeMapper> table = {{"Tan", unary<tanOf>},
                                                                    {"Asin", unary<asinOf>},
                                                                    {"Acos", unary<acosOf>},
                                                                    {"Atan", unary<atanOf>},
                                                                    {"Sinh", unary<sinhOf>},
                                                                    {"Cosh", unary<coshOf>},
                                                                    {"Asinh", unary<asinhOf>},
                                                                    {"Acosh", unary<acoshOf>},
                                                                    {"Atanh", unary<atanhOf>},
                                                                    {"ThresholdedRelu", unary<thresholdedRelu>},
                                                                    {"Shrink", unary<shrink>},
                                                                    {"Celu", unary<celu>},
                                                                    {"BitwiseNot", unary<bitwiseNot>},
                                                                    {"Xor", logicalXor},
                                                                    {"BitwiseAnd", bitwise<0>},
                                                                    {"BitwiseOr", bitwise<1>},
                                                                    {"BitwiseXor", bitwise<2>},
                                                                    {"BitShift", bitShift},
                                                                    {"NonZero", nonZero},
                                                                    {"EyeLike", eyeLike},
                                                                    {"Compress", compress},
                                                                    {"Hardmax", hardmax},
                                                                    {"ReduceProd", reduceProd}};
  return table;
}

}  // namespace

const NodeMapper* findConstantFolder(const std::string& opType) {
  auto it = folders().find(opType);
  return it == folders().end() ? nullptr : &it->second;
}

const std::vector<std::string>& constantOnlyOnnxOps() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, _] : folders()) out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return names;
}

}  // namespace irc::onnx_import
