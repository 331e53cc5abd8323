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

}  // namespace irc
