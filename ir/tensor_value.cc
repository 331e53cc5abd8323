#include "ir/tensor_value.h"

namespace irc {

TensorValue TensorValue::zeros(Shape shape) {
  TensorValue t;
  t.data.assign(static_cast<size_t>(numElements(shape)), 0.0);
  t.shape = std::move(shape);
  return t;
}

std::vector<int64_t> stridesOf(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

TensorValue sliceOf(const TensorValue& t, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  Shape out;
  for (const auto& [b, e] : ranges) out.push_back(e - b);
  TensorValue r = TensorValue::zeros(out);
  std::vector<int64_t> inStrides = stridesOf(t.shape), outStrides = stridesOf(out);
  for (int64_t i = 0; i < r.size(); ++i) {
    int64_t rest = i, src = 0;
    for (size_t d = 0; d < out.size(); ++d) {
      int64_t idx = rest / outStrides[d];
      rest %= outStrides[d];
      src += (idx + ranges[d].first) * inStrides[d];
    }
    r.data[i] = t.data[src];
  }
  return r;
}

TensorValue concatAlong(const std::vector<TensorValue>& parts, int64_t dim) {
  Shape out = parts.at(0).shape;
  out[dim] = 0;
  for (const auto& p : parts) out[dim] += p.shape[dim];
  TensorValue r = TensorValue::zeros(out);
  std::vector<int64_t> so = stridesOf(out);
  int64_t offset = 0;
  for (const auto& p : parts) {
    std::vector<int64_t> sp = stridesOf(p.shape);
    for (int64_t i = 0; i < p.size(); ++i) {
      int64_t rest = i, o = 0;
      for (size_t d = 0; d < p.shape.size(); ++d) {
        o += (rest / sp[d] + (static_cast<int64_t>(d) == dim ? offset : 0)) * so[d];
        rest %= sp[d];
      }
      r.data[o] = p.data[i];
    }
    offset += p.shape[dim];
  }
  return r;
}

TensorValue blockAlong(const TensorValue& t, int64_t dim, int64_t count, int64_t index) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    bool along = static_cast<int64_t>(d) == dim;
    int64_t size = t.shape[d] / (along ? count : 1);
    ranges.emplace_back(along ? index * size : 0, along ? (index + 1) * size : t.shape[d]);
  }
  return sliceOf(t, ranges);
}

}  // namespace irc
