#pragma once
// The float64 reference semantics of every local op (spec/ops.md's numpy expressions): model ops
// and the local inserted ops (StridedSlice, Split, Concat, Reshape, RealDiv). Collectives need
// several ranks and live in the SPMD simulator.
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

}  // namespace irc
