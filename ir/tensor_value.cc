#include "ir/tensor_value.h"

#include <algorithm>

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

namespace {

// Copies the box of shape `box` at `srcStart` in `src` to `dstStart` in `dst`, a contiguous run
// of the innermost dim at a time (the simulator's slices and concatenations are most of its
// copying).
void copyBox(const TensorValue& src, const std::vector<int64_t>& srcStart, TensorValue& dst, const std::vector<int64_t>& dstStart,
             const Shape& box) {
  if (numElements(box) == 0) return;
  size_t rank = box.size();
  if (rank == 0) {
    dst.data[0] = src.data[0];
    return;
  }
  std::vector<int64_t> ss = stridesOf(src.shape), ds = stridesOf(dst.shape);
  int64_t run = box[rank - 1];
  std::vector<int64_t> idx(rank, 0);  // the odometer over the outer dims
  while (true) {
    int64_t so = 0, dso = 0;
    for (size_t d = 0; d < rank; ++d) {
      so += (srcStart[d] + idx[d]) * ss[d];
      dso += (dstStart[d] + idx[d]) * ds[d];
    }
    std::copy_n(src.data.data() + so, run, dst.data.data() + dso);
    size_t d = rank - 1;
    while (d > 0) {
      if (++idx[d - 1] < box[d - 1]) break;
      idx[d - 1] = 0;
      --d;
    }
    if (d == 0) return;
  }
}

}  // namespace

TensorValue sliceOf(const TensorValue& t, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  Shape out;
  std::vector<int64_t> begin;
  for (const auto& [b, e] : ranges) {
    out.push_back(e - b);
    begin.push_back(b);
  }
  TensorValue r = TensorValue::zeros(out);
  copyBox(t, begin, r, std::vector<int64_t>(out.size(), 0), out);
  return r;
}

TensorValue concatAlong(const std::vector<const TensorValue*>& parts, int64_t dim) {
  Shape out = parts.at(0)->shape;
  out[dim] = 0;
  for (const TensorValue* p : parts) out[dim] += p->shape[dim];
  TensorValue r = TensorValue::zeros(out);
  std::vector<int64_t> at(out.size(), 0);
  for (const TensorValue* p : parts) {
    copyBox(*p, std::vector<int64_t>(p->shape.size(), 0), r, at, p->shape);
    at[dim] += p->shape[dim];
  }
  return r;
}

TensorValue concatAlong(const std::vector<TensorValue>& parts, int64_t dim) {
  std::vector<const TensorValue*> pointers;
  for (const TensorValue& p : parts) pointers.push_back(&p);
  return concatAlong(pointers, dim);
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
