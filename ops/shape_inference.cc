#include "ops/shape_inference.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/limits.h"
#include "ops/op_family.h"

namespace irc {

InferError fail(std::string message, int operandIndex, std::string attr) {
  return {std::move(message), operandIndex, std::move(attr)};
}

int64_t intAttr(const AttrMap& attrs, const char* name) { return std::get<int64_t>(attrs.at(name)); }
bool boolAttr(const AttrMap& attrs, const char* name) { return std::get<bool>(attrs.at(name)); }

IntTuple asTuple(const Attribute& a) {
  if (auto* i = std::get_if<int64_t>(&a)) return {*i};
  return std::get<IntTuple>(a);
}

std::string typeText(const TensorType& t) { return fmt::format("{} {}", modelName(t.dtype), formatShape(t.shape)); }

std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

TensorType scalarOperandType(const InferOperand& o) {
  if (o.tensor) return *o.tensor;
  return {std::get<ScalarTensor>(*o.constant).dtype, {}};
}

std::optional<IntTuple> normalizePerm(const IntTuple& perm, size_t rank) {
  if (perm.size() != rank) return std::nullopt;
  IntTuple out;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    auto axis = normalizeAxis(p, static_cast<int64_t>(rank));
    if (!axis || seen[*axis]) return std::nullopt;
    seen[*axis] = true;
    out.push_back(*axis);
  }
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

namespace {

InferResult inferOn(const OpDef& def, const std::vector<Operand>& operands, const AttrMap& attrs,
                    const std::vector<const TensorType*>& operandTypes) {
  std::vector<InferOperand> in;
  in.reserve(operands.size());
  for (size_t i = 0; i < operands.size(); ++i)
    in.push_back({operandTypes[i], operands[i].isValue() ? nullptr : &*operands[i].constant});
  return inferResultTypes(def, in, attrs);
}

}  // namespace

InferResult inferOnOperandTypes(const Op& op, const std::vector<const TensorType*>& operandTypes) {
  return inferOn(defOf(op), op.operands, op.attrs, operandTypes);
}

InferResult inferOnOperandTypes(const OpForRank& op, const std::vector<const TensorType*>& operandTypes) {
  return inferOn(defOf(op.op()), op.operands(), op.attrs(), operandTypes);
}

void giveScalarsTensorDtype(const Graph& graph, Op& op) {
  const OpDef& def = defOf(op);
  if (def.scalarDtypeFrom < 0) return;
  const TensorType* tensor = nullptr;
  for (size_t i = def.scalarDtypeFrom; i < op.operands.size() && !tensor; ++i)
    if (op.operands[i].isValue()) tensor = &graph.value(op.operands[i].value).type;
  for (Operand& o : op.operands)
    if (auto* scalar = o.constant ? std::get_if<ScalarTensor>(&*o.constant) : nullptr; scalar && tensor)
      scalar->dtype = tensor->dtype;
}

InferResult inferResultTypes(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) {
  InferResult result = rulesOf(def).inferTypes(def, in, attrs);
  // Every result stays within the documented element bound (docs/limits.md): a OneHot depth or
  // a Reshape target can otherwise ask for sizes whose byte counts wrap around int64.
  if (auto* types = std::get_if<std::vector<TensorType>>(&result))
    for (const TensorType& t : *types)
      if (!withinElementLimit(t.shape))
        return fail(fmt::format("the result {} would have more than {} elements (docs/limits.md)", formatShape(t.shape),
                                kMaxTensorElements));
  return result;
}

}  // namespace irc
