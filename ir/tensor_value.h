#pragma once
// A dense float64 tensor for the reference interpreter (row-major). Integer and bool values are
// stored as doubles too; `irc verify` computes in float64 whatever the declared dtype.
#include <cstdint>
#include <vector>

#include "ir/shape.h"

namespace irc {

struct TensorValue {
  Shape shape;
  std::vector<double> data;

  static TensorValue zeros(Shape shape);
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

std::vector<int64_t> stridesOf(const Shape& shape);
// The block [begin, end) per dim.
TensorValue sliceOf(const TensorValue& t, const std::vector<std::pair<int64_t, int64_t>>& ranges);
// The parts concatenated along `dim` (numpy.concatenate).
TensorValue concatAlong(const std::vector<TensorValue>& parts, int64_t dim);
TensorValue concatAlong(const std::vector<const TensorValue*>& parts, int64_t dim);
// Block `index` of `count` equal blocks along `dim`.
TensorValue blockAlong(const TensorValue& t, int64_t dim, int64_t count, int64_t index);

}  // namespace irc
