#include "ir/reference_ops.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "ir/op_defs.h"
#include "ir/shape_inference.h"

namespace irc {
namespace {

using Index = std::vector<int64_t>;

// Calls fn(index) for every index of `shape` in row-major order.
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

// The element of `t` that broadcasting maps output index `idx` to.
double broadcastAt(const TensorValue& t, const Index& idx, const std::vector<int64_t>& strides) {
  size_t offset = idx.size() - t.shape.size();
  int64_t o = 0;
  for (size_t d = 0; d < t.shape.size(); ++d) o += (t.shape[d] == 1 ? 0 : idx[offset + d]) * strides[d];
  return t.data[o];
}

IntTuple tupleOf(const Attribute& a) {
  if (auto* i = std::get_if<int64_t>(&a)) return {*i};
  return std::get<IntTuple>(a);
}

TensorValue matmul(const TensorValue& x, const TensorValue& w, bool ta, bool tb, const Shape& outShape) {
  TensorValue out = TensorValue::zeros(outShape);
  size_t rank = outShape.size();
  int64_t m = outShape[rank - 2], n = outShape[rank - 1];
  size_t rx = x.shape.size(), rw = w.shape.size();
  auto sx = stridesOf(x.shape), sw = stridesOf(w.shape), so = stridesOf(outShape);
  Shape batch(outShape.begin(), outShape.end() - 2);
  forEach(batch, [&](const Index& b) {
    // Batch offsets with broadcasting of each operand's batch dims.
    auto batchOffset = [&](const TensorValue& t, const std::vector<int64_t>& st) {
      size_t tb2 = t.shape.size() - 2, off = batch.size() - tb2;
      int64_t o = 0;
      for (size_t d = 0; d < tb2; ++d) o += (t.shape[d] == 1 ? 0 : b[off + d]) * st[d];
      return o;
    };
    int64_t ox = batchOffset(x, sx), ow = batchOffset(w, sw);
    int64_t oo = 0;
    for (size_t d = 0; d < batch.size(); ++d) oo += b[d] * so[d];
    // Each batch's matrices are contiguous and row-major: Eigen multiplies them in place.
    using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<const Matrix> a(x.data.data() + ox, x.shape[rx - 2], x.shape[rx - 1]);
    Eigen::Map<const Matrix> c(w.data.data() + ow, w.shape[rw - 2], w.shape[rw - 1]);
    Eigen::Map<Matrix> result(out.data.data() + oo, m, n);
    if (ta && tb) result.noalias() = a.transpose() * c.transpose();
    else if (ta) result.noalias() = a.transpose() * c;
    else if (tb) result.noalias() = a * c.transpose();
    else result.noalias() = a * c;
  });
  return out;
}

// Applies fn to every 1-d line of `t` along `axis` (in place on a copy).
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

// One function per op family with more than a line of arithmetic; `in[i]` is operand i's value
// (null for constants).
using Inputs = std::vector<const TensorValue*>;

const Attribute& constantOf(const Op& op, size_t i) { return *op.operands.at(i).constant; }
int64_t intAttr(const Op& op, const char* name) { return std::get<int64_t>(op.attrs.at(name)); }

TensorValue broadcastBinary(const Op& op, const Inputs& in, const Shape& outShape) {
  TensorValue y;
  if (in[1]) y = *in[1];
  else y = {{}, {std::get<ScalarTensor>(constantOf(op, 1)).value}};
  TensorValue out = TensorValue::zeros(outShape);
  auto sx = stridesOf(in[0]->shape), sy = stridesOf(y.shape);
  BinaryKernel kernel = op.def().binary;
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) { out.data[i++] = kernel(broadcastAt(*in[0], idx, sx), broadcastAt(y, idx, sy)); });
  return out;
}

TensorValue select(const Op& op, const Inputs& in, const Shape& outShape) {
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

// An opaque op has no semantics here: its result is a placeholder that depends only on the op's
// name, so that the single-device program and every rank (which hold its operands and result
// whole) agree on it and everything downstream can still be compared. Integer and bool results
// are zeros (an index into a table stays in range); floats are in [-1, 1).
TensorValue opaquePlaceholder(const Op& op, const TensorType& type) {
  TensorValue out = TensorValue::zeros(type.shape);
  if (!isFloat(type.dtype)) return out;
  uint64_t state = 1469598103934665603ull;  // FNV-1a of the name: the same on every machine
  for (unsigned char c : op.name) state = (state ^ c) * 1099511628211ull;
  state |= 1;
  for (double& v : out.data) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;  // xorshift64
    v = static_cast<double>(state >> 11) / static_cast<double>(uint64_t{1} << 52) - 1.0;
  }
  return out;
}

TensorValue cast(const Op& op, const TensorValue& x) {
  TensorValue out = x;
  DType to = std::get<DType>(constantOf(op, 1));
  for (double& v : out.data) {
    if (to == DType::Bool) v = v != 0 ? 1.0 : 0.0;
    else if (isInteger(to)) v = std::trunc(v);
  }
  return out;
}

TensorValue softmax(const Op& op, const TensorValue& x) {
  int64_t axis = *normalizeAxis(intAttr(op, "axis"), x.shape.size());
  bool log = op.def().logarithmic;
  return alongAxis(x, axis, [&](std::vector<double>& line) {
    double mx = *std::max_element(line.begin(), line.end()), sum = 0;
    for (double v : line) sum += std::exp(v - mx);
    for (double& v : line) v = log ? v - mx - std::log(sum) : std::exp(v - mx) / sum;
  });
}

TensorValue transpose(const Op& op, const TensorValue& x, const Shape& outShape) {
  IntTuple perm = *normalizePerm(std::get<IntTuple>(constantOf(op, 1)), x.shape.size());
  TensorValue out = TensorValue::zeros(outShape);
  auto sx = stridesOf(x.shape);
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    int64_t o = 0;
    for (size_t d = 0; d < perm.size(); ++d) o += idx[d] * sx[perm[d]];
    out.data[i++] = x.data[o];
  });
  return out;
}

TensorValue gather(const Op& op, const TensorValue& params, const TensorValue& indices, const Shape& outShape) {
  int64_t axis = *normalizeAxis(std::get<int64_t>(constantOf(op, 2)), params.shape.size());
  TensorValue out = TensorValue::zeros(outShape);
  auto sp = stridesOf(params.shape), si = stridesOf(indices.shape);
  size_t ir = indices.shape.size();
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    Index pi(params.shape.size());
    for (int64_t d = 0; d < axis; ++d) pi[d] = idx[d];
    Index ii(idx.begin() + axis, idx.begin() + axis + ir);
    double raw = indices.data[offsetOf(ii, si)];
    int64_t row = static_cast<int64_t>(raw);
    if (row < 0 || row >= params.shape[axis])
      throw ReferenceError(fmt::format("Gather '{}': index {} is outside the table (size {})", op.name, raw, params.shape[axis]));
    pi[axis] = row;
    for (size_t d = axis + 1; d < params.shape.size(); ++d) pi[d] = idx[d - 1 + ir];
    out.data[i++] = params.data[offsetOf(pi, sp)];
  });
  return out;
}

TensorValue concat(const Op& op, const Inputs& in, const Shape& outShape) {
  return concatAlong(in, *normalizeAxis(intAttr(op, "axis"), outShape.size()));
}

std::vector<TensorValue> split(const Op& op, const TensorValue& x, const std::vector<TensorType>& results) {
  int64_t axis = *normalizeAxis(intAttr(op, "axis"), x.shape.size());
  std::vector<TensorValue> outs;
  int64_t part = results[0].shape[axis];
  for (size_t r = 0; r < results.size(); ++r) {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (size_t d = 0; d < x.shape.size(); ++d)
      ranges.emplace_back(static_cast<int64_t>(d) == axis ? r * part : 0, static_cast<int64_t>(d) == axis ? (r + 1) * part : x.shape[d]);
    outs.push_back(sliceOf(x, ranges));
  }
  return outs;
}

std::vector<TensorValue> layerNorm(const Op& op, const Inputs& in, const std::vector<TensorType>& results) {
  const TensorValue& x = *in[0];
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = *normalizeAxis(intAttr(op, "begin_norm_axis"), rank);
  double eps = std::get<double>(op.attrs.at("epsilon"));
  int64_t inner = 1;
  for (int64_t d = axis; d < rank; ++d) inner *= x.shape[d];
  int64_t outer = x.size() / inner;
  TensorValue y = TensorValue::zeros(x.shape), mean = TensorValue::zeros(results[1].shape), var = TensorValue::zeros(results[2].shape);
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

std::vector<TensorValue> softmaxCrossEntropy(const TensorValue& logits, const TensorValue& labels) {
  int64_t n = logits.shape[0], c = logits.shape[1];
  TensorValue loss = TensorValue::zeros({n}), grad = TensorValue::zeros({n, c});
  for (int64_t i = 0; i < n; ++i) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < c; ++j) mx = std::max(mx, logits.data[i * c + j]);
    for (int64_t j = 0; j < c; ++j) sum += std::exp(logits.data[i * c + j] - mx);
    for (int64_t j = 0; j < c; ++j) {
      double logp = logits.data[i * c + j] - mx - std::log(sum);
      loss.data[i] -= labels.data[i * c + j] * logp;
      grad.data[i * c + j] = std::exp(logp) - labels.data[i * c + j];
    }
  }
  return {loss, grad};
}

TensorValue oneHot(const Op& op, const Inputs& in, const Shape& outShape) {
  auto scalar = [&](size_t i) { return in[i] ? in[i]->data[0] : std::get<ScalarTensor>(constantOf(op, i)).value; };
  double on = scalar(2), off = scalar(3);
  int64_t axis = intAttr(op, "axis");
  int64_t pos = axis == -1 ? static_cast<int64_t>(outShape.size()) - 1 : axis;
  TensorValue out = TensorValue::zeros(outShape);
  auto si = stridesOf(in[0]->shape);
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    Index ii;
    for (size_t d = 0; d < idx.size(); ++d)
      if (static_cast<int64_t>(d) != pos) ii.push_back(idx[d]);
    out.data[i++] = static_cast<int64_t>(in[0]->data[offsetOf(ii, si)]) == idx[pos] ? on : off;
  });
  return out;
}

TensorValue stridedSlice(const Op& op, const TensorValue& x) {
  const IntTuple& begin = std::get<IntTuple>(constantOf(op, 1));
  const IntTuple& end = std::get<IntTuple>(constantOf(op, 2));
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t d = 0; d < begin.size(); ++d) ranges.emplace_back(begin[d], end[d]);
  return sliceOf(x, ranges);
}

TensorValue withShape(TensorValue x, const Shape& shape) {
  x.shape = shape;  // Reshape, ExpandDims, Squeeze: the data in the same order
  return x;
}

}  // namespace

std::vector<TensorValue> evaluateOp(const Op& op, const std::vector<const TensorValue*>& in,
                                    const std::vector<TensorType>& results) {
  const OpDef& def = op.def();
  const Shape& outShape = results.at(0).shape;
  switch (def.family) {
    case OpFamily::Mirror: return {*in[0]};  // the forward graph's identity
    case OpFamily::MatMul:
    case OpFamily::BatchMatMul:
      return {matmul(*in[0], *in[1], std::get<bool>(op.attrs.at("transpose_a")), std::get<bool>(op.attrs.at("transpose_b")),
                     outShape)};
    case OpFamily::Broadcast: {
      TensorValue out = broadcastBinary(op, in, outShape);
      // An integer result holds integers: RealDiv of ints truncates toward zero (C's and ONNX's
      // integer division); the other kernels give integers from integers anyway.
      if (isInteger(results[0].dtype))
        for (double& v : out.data) v = std::trunc(v);
      return {out};
    }
    case OpFamily::Select: return {select(op, in, outShape)};
    case OpFamily::BiasAdd: {
      TensorValue out = *in[0];
      int64_t i = 0;
      forEach(out.shape, [&](const Index& idx) { out.data[i++] += in[1]->data[idx[1]]; });
      return {out};
    }
    case OpFamily::Unary: {
      TensorValue out = *in[0];
      for (double& v : out.data) v = def.unary(v);
      return {out};
    }
    case OpFamily::Cast: return {cast(op, *in[0])};
    case OpFamily::Softmax: return {softmax(op, *in[0])};
    case OpFamily::Reduce: return {reduce(def.reduction, *in[0], tupleOf(constantOf(op, 1)), outShape)};
    case OpFamily::Reshape:
    case OpFamily::ExpandDims:
    case OpFamily::Squeeze: return {withShape(*in[0], outShape)};
    case OpFamily::Transpose: return {transpose(op, *in[0], outShape)};
    case OpFamily::Gather: return {gather(op, *in[0], *in[1], outShape)};
    case OpFamily::Concat: return {concat(op, in, outShape)};
    case OpFamily::Split: return split(op, *in[0], results);
    case OpFamily::LayerNorm: return layerNorm(op, in, results);
    case OpFamily::SoftmaxCrossEntropy: return softmaxCrossEntropy(*in[0], *in[1]);
    case OpFamily::OneHot: return {oneHot(op, in, outShape)};
    case OpFamily::Opaque: return {opaquePlaceholder(op, results[0])};
    case OpFamily::Triangle: {
      // Keep x[..., i, j] where j - i >= diagonal (Triu) or <= diagonal (Tril).
      TensorValue out = *in[0];
      const int64_t diagonal = std::get<int64_t>(op.attrs.at("diagonal")), rank = static_cast<int64_t>(out.shape.size());
      int64_t k = 0;
      forEach(out.shape, [&](const Index& idx) {
        int64_t offset = idx[rank - 1] - idx[rank - 2];
        if (def.upper ? offset < diagonal : offset > diagonal) out.data[k] = 0;
        ++k;
      });
      return {out};
    }
    case OpFamily::Slice: {
      const auto& begin = std::get<IntTuple>(constantOf(op, 1));
      std::vector<std::pair<int64_t, int64_t>> ranges;
      for (size_t d = 0; d < begin.size(); ++d) ranges.emplace_back(begin[d], begin[d] + outShape[d]);
      return {sliceOf(*in[0], ranges)};
    }
    case OpFamily::BroadcastTo: {
      TensorValue out = TensorValue::zeros(outShape);
      auto sx = stridesOf(in[0]->shape);
      int64_t i = 0;
      forEach(outShape, [&](const Index& idx) { out.data[i++] = broadcastAt(*in[0], idx, sx); });
      return {out};
    }
    case OpFamily::StridedSlice: return {stridedSlice(op, *in[0])};
    default:
      throw InternalError(fmt::format("the reference interpreter runs collective '{}' only across ranks", op.type));
  }
}

}  // namespace irc
