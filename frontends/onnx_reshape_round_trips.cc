#include "frontends/onnx_reshape_round_trips.h"

#include "ir/graph_edit.h"

namespace irc::onnx_import {
namespace {

const IntTuple* tupleOperand(const Op& op, size_t i) {
  if (op.operands.size() <= i || !op.operands[i].constant) return nullptr;
  return std::get_if<IntTuple>(&*op.operands[i].constant);
}

// The op producing `v` when `v` is an op result that only `reader` reads and the graph does not
// return; else null.
const Op* soleProducer(const Graph& g, ValueId v, const std::vector<std::vector<Use>>& uses,
                       const std::vector<bool>& isOutput) {
  const Value& value = g.value(v);
  if (value.producer == kNoId || isOutput[v] || uses[v].size() != 1) return nullptr;
  return &g.op(value.producer);
}

// How many leading dims of `in` the Reshape to `out` merges into out's dim 0, with every other
// dim unchanged; 0 when it does something else.
size_t mergedLeadingDims(const Shape& in, const Shape& out) {
  if (out.empty() || in.size() < out.size() + 1) return 0;
  size_t merged = in.size() - out.size() + 1;
  int64_t product = 1;
  for (size_t d = 0; d < merged; ++d) product *= in[d];
  if (product != out[0]) return 0;
  for (size_t d = 1; d < out.size(); ++d)
    if (in[merged + d - 1] != out[d]) return 0;
  return merged;
}

}  // namespace

int foldReshapeRoundTrips(Graph& g, std::map<ValueId, TensorValue>& parameterData) {
  auto uses = computeUses(g);
  std::vector<bool> isOutput(g.values.size(), false);
  for (ValueId v : g.outputs) isOutput[v] = true;
  std::vector<bool> erase(g.ops.size(), false);
  int folded = 0;
  for (OpId id : g.order) {
    const Op& second = g.op(id);
    if (second.type != "Reshape" || !second.operands[0].isValue()) continue;
    const Op* transpose = soleProducer(g, second.operands[0].value, uses, isOutput);
    if (!transpose || transpose->type != "Transpose" || !transpose->operands[0].isValue()) continue;
    const IntTuple* perm = tupleOperand(*transpose, 1);
    if (!perm || perm->empty() || (*perm)[0] != 0) continue;
    const Op* first = soleProducer(g, transpose->operands[0].value, uses, isOutput);
    if (!first || first->type != "Reshape" || !first->operands[0].isValue()) continue;
    ValueId source = first->operands[0].value;
    const Shape& sourceShape = g.value(source).type.shape;
    size_t merged = mergedLeadingDims(sourceShape, g.value(first->results[0]).type.shape);
    if (merged < 2) continue;
    // The Transpose now reads the unmerged tensor: the merged dims stay in place, the others
    // move as before, shifted past them.
    IntTuple widened;
    for (size_t d = 0; d < merged; ++d) widened.push_back(static_cast<int64_t>(d));
    for (size_t d = 1; d < perm->size(); ++d) widened.push_back((*perm)[d] + static_cast<int64_t>(merged) - 1);
    Shape shape;
    for (int64_t axis : widened) shape.push_back(sourceShape[axis]);
    OpId transposeId = g.value(second.operands[0].value).producer;
    erase[g.value(transpose->operands[0].value).producer] = true;
    Op& t = g.op(transposeId);
    t.operands[0].value = source;
    t.operands[1].constant = Attribute(widened);
    g.value(t.results[0]).type.shape = shape;
    ++folded;
  }
  if (folded == 0) return 0;
  std::vector<ValueId> renumbered = eraseOps(g, erase);
  std::map<ValueId, TensorValue> data;
  for (auto& [v, tensor] : parameterData) data.emplace(renumbered[v], std::move(tensor));
  parameterData = std::move(data);
  return folded;
}

}  // namespace irc::onnx_import
