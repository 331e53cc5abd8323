#include "ops/reference_ops.h"

#include <algorithm>

#include <fmt/format.h>

#include "ops/op_family.h"

namespace irc {

void forEach(const Shape& shape, const std::function<void(const Index&)>& fn) {
  int64_t n = numElements(shape);
  Index idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(idx);
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t offsetOf(const Index& idx, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
  return o;
}

double broadcastAt(const TensorValue& t, const Index& idx, const std::vector<int64_t>& strides) {
  size_t offset = idx.size() - t.shape.size();
  int64_t o = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) o += (t.shape[d] == 1 ? 0 : idx[offset + d]) * strides[d];
  return t.data[o];
}

TensorValue alongAxis(const TensorValue& t, int64_t axis, const std::function<void(std::vector<double>&)>& fn) {
  TensorValue out = t;
  auto st = stridesOf(t.shape);
  Shape outer = t.shape;
  outer[axis] = 1;
  forEach(outer, [&](const Index& idx) {
    int64_t base = offsetOf(idx, st);
    std::vector<double> line(t.shape[axis]);
    for (int64_t i = 0; i < t.shape[axis]; ++i) line[i] = t.data[base + i * st[axis]];
    fn(line);
    for (int64_t i = 0; i < t.shape[axis]; ++i) out.data[base + i * st[axis]] = line[i];
  });
  return out;
}

const Attribute& constantOf(const Op& op, size_t i) { return *op.operands.at(i).constant; }
int64_t intAttr(const Op& op, const char* name) { return std::get<int64_t>(op.attrs.at(name)); }

int64_t indexWithin(const Op& op, double raw, int64_t dim) {
  int64_t i = static_cast<int64_t>(raw);
  if (i < -dim || i >= dim)
    throw ReferenceError(fmt::format("{} '{}': index {} is outside a dim of size {}", op.type, op.name, raw, dim));
  return i < 0 ? i + dim : i;
}

TensorValue reshaped(TensorValue x, const Shape& shape) {
  x.shape = shape;
  return x;
}

double reduceCombine(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::Max: return std::max(a, b);
    case ReduceOp::Min: return std::min(a, b);
    case ReduceOp::Prod: return a * b;
    case ReduceOp::Sum: return a + b;
  }
  return a + b;
}

std::vector<TensorValue> evaluateOp(const Op& op, const std::vector<const TensorValue*>& in,
                                    const std::vector<TensorType>& results) {
  return rulesOf(op).evaluate(op, in, results);
}

}  // namespace irc
