#pragma once
// Result types of an op from its operand types, constants and attributes (attributes already
// completed with their defaults). Each family computes its own (OpFamilyRules::inferTypes);
// inferResultTypes adds the checks every op shares. Works on plain types, so the frontends use
// it on global shapes and shape slicing re-runs it on each rank's local shapes. The helpers
// below are the families' shared vocabulary for it.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/graph.h"
#include "ops/inserted_ops.h"
#include "ops/op_defs.h"

namespace irc {

struct InferOperand {
  const TensorType* tensor = nullptr;   // for a value operand
  const Attribute* constant = nullptr;  // for a constant operand
};

// Where a failure lies, so the caller can point at the right YAML node.
struct InferError {
  std::string message;
  int operandIndex = -1;  // the operand at fault, or -1
  std::string attr;       // the attribute at fault, or ""
};

using InferResult = std::variant<std::vector<TensorType>, InferError>;

InferResult inferResultTypes(const OpDef& def, const std::vector<InferOperand>& operands, const AttrMap& attrs);
// A graph op's result types on other operand types (a rank's local ones): `operandTypes` holds
// one per operand, null for a constant (the op's own constant is used).
InferResult inferOnOperandTypes(const Op& op, const std::vector<const TensorType*>& operandTypes);
// The same for one rank's view of the op (an inserted op of the global graph with the rank's
// groups and bounds).
InferResult inferOnOperandTypes(const OpForRank& op, const std::vector<const TensorType*>& operandTypes);

// A number written for a binary op's scalar operand (Add's y, Select's x or y) is a scalar of the
// op's tensor dtype, as MindSpore converts a Python number: `Add(int_x, 1)` adds an int
// (OpDef::scalarDtypeFrom). The frontends apply it to each op they read, before its types.
void giveScalarsTensorDtype(const Graph& graph, Op& op);

// Normalizes a possibly negative axis against `rank` (numpy rules); nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);
// A Transpose perm with its entries in [-rank, rank) made non-negative; nullopt unless it is a
// permutation of 0 .. rank-1 then (ops.md).
std::optional<IntTuple> normalizePerm(const IntTuple& perm, size_t rank);

// --- For the families' inferTypes ---
// A failure with its location hint, so that each check stays one line.
InferError fail(std::string message, int operandIndex = -1, std::string attr = "");
// numpy broadcasting of two shapes; nullopt when a pair of dims is incompatible.
std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b);
int64_t intAttr(const AttrMap& attrs, const char* name);
bool boolAttr(const AttrMap& attrs, const char* name);
// An int or a tuple of ints as a tuple (a reduction's axis).
IntTuple asTuple(const Attribute& a);
std::string typeText(const TensorType& t);  // "float32 (8, 8)"
// A tensor operand's type, or a scalar constant's (0-d of its dtype).
TensorType scalarOperandType(const InferOperand& o);

}  // namespace irc
