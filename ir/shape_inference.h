#pragma once
// Result types of every op in the op set from its operand types, constants and attributes
// (attributes already completed with their defaults). Works on plain types, so the frontend
// uses it on global shapes and shape slicing re-runs it on each rank's local shapes.
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.h"
#include "ir/op_defs.h"

namespace irc {

struct InferOperand {
  const TensorType* tensor = nullptr;    // for a value operand
  const Attribute* constant = nullptr;   // for a constant operand
};

// Where a failure lies, so the caller can point at the right YAML node.
struct InferError {
  std::string message;
  int operandIndex = -1;  // the operand at fault, or -1
  std::string attr;       // the attribute at fault, or ""
};

using InferResult = std::variant<std::vector<TensorType>, InferError>;

InferResult inferResultTypes(const OpDef& def, const std::vector<InferOperand>& operands, const AttrMap& attrs);

// Normalizes a possibly negative axis against `rank` (numpy rules); nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);
// A Transpose perm with its entries in [-rank, rank) made non-negative; nullopt unless it is a
// permutation of 0 .. rank-1 then (ops.md).
std::optional<IntTuple> normalizePerm(const IntTuple& perm, size_t rank);

}  // namespace irc
