#include "frontends/onnx/mapping/mapping_common.h"

namespace irc::onnx_import {
namespace {

// ---- contractions ----

Terms matMul(NodeMapping& m) {
  auto a = need(m, 0), b = need(m, 1);
  if (!a || !b) return std::nullopt;
  Shape sa = shapeOf(m, *a), sb = shapeOf(m, *b);
  if (sa.empty() || sb.empty()) {
    m.error(
        fmt::format("multiplies a scalar (operand ranks {} and {}); MatMul takes tensors of rank >= 1", sa.size(), sb.size()));
    return std::nullopt;
  }
  if (sa.size() >= 2 && sb.size() >= 2)
    return one(m.emit1(sa.size() == 2 && sb.size() == 2 ? "MatMul" : "BatchMatMul", {*a, *b}));
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

}  // namespace

void addContractionMappers(MapperTable& table) {
  table.insert({
      {"MatMul", matMul},
      {"Gemm", gemm},
  });
}

}  // namespace irc::onnx_import
