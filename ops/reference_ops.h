#pragma once
// The float64 reference semantics of every local op (spec/ops.md's numpy expressions): model ops
// and the local inserted ops (StridedSlice, Split, Concat, Reshape, RealDiv). Each family holds
// its kernel (OpFamilyRules::evaluate); the helpers below are their shared vocabulary.
// Collectives need several ranks and live in the SPMD simulator.
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_value.h"

namespace irc {

// A value the reference refuses (an index outside its table): the model's inputs are wrong.
class ReferenceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `operands[i]` is the value of operand i (null for constants); `results` the result types.
std::vector<TensorValue> evaluateOp(const Op& op, const std::vector<const TensorValue*>& operands,
                                    const std::vector<TensorType>& results);

// --- For the families' kernels ---
using Index = std::vector<int64_t>;
// Calls fn(index) for every index of `shape` in row-major order.
void forEach(const Shape& shape, const std::function<void(const Index&)>& fn);
int64_t offsetOf(const Index& idx, const std::vector<int64_t>& strides);
// The element of `t` that broadcasting maps output index `idx` to (`strides` are t's).
double broadcastAt(const TensorValue& t, const Index& idx, const std::vector<int64_t>& strides);
// Applies fn to every 1-d line of `t` along `axis` (on a copy).
TensorValue alongAxis(const TensorValue& t, int64_t axis, const std::function<void(std::vector<double>&)>& fn);
const Attribute& constantOf(const Op& op, size_t i);
int64_t intAttr(const Op& op, const char* name);
// An index read from an indices tensor, negative ones counting from the end (ONNX's rule); a
// ReferenceError naming the op outside [-dim, dim).
int64_t indexWithin(const Op& op, double raw, int64_t dim);
// x's elements, in the same order, under another shape (Reshape, ExpandDims, Squeeze).
TensorValue reshaped(TensorValue x, const Shape& shape);
// Two partial values combined as a reduction `op` combines them (a collective's, a partial
// layout's).
double reduceCombine(ReduceOp op, double a, double b);

}  // namespace irc
