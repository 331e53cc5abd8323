#include "ir/graph_edit.h"

#include <stdexcept>

namespace irc {

std::vector<ValueId> eraseOps(Graph& graph, const std::vector<bool>& erase) {
  std::vector<OpId> newOp(graph.ops.size(), kNoId);
  std::vector<bool> valueErased(graph.values.size(), false);
  for (OpId id = 0; id < static_cast<OpId>(graph.ops.size()); ++id)
    if (erase[id])
      for (ValueId r : graph.ops[id].results) valueErased[r] = true;
  std::vector<ValueId> newValue(graph.values.size(), kNoId);
  std::vector<Value> values;
  values.reserve(graph.values.size());
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values.size()); ++v) {
    if (valueErased[v]) continue;
    newValue[v] = static_cast<ValueId>(values.size());
    values.push_back(std::move(graph.values[v]));
  }
  std::vector<Op> ops;
  ops.reserve(graph.ops.size());
  for (OpId id = 0; id < static_cast<OpId>(graph.ops.size()); ++id) {
    if (erase[id]) continue;
    newOp[id] = static_cast<OpId>(ops.size());
    ops.push_back(std::move(graph.ops[id]));
  }
  auto remapValue = [&](ValueId v) {
    if (v == kNoId) return v;
    if (newValue[v] == kNoId) throw std::logic_error("eraseOps: a surviving op or list still names an erased result");
    return newValue[v];
  };
  for (Op& op : ops) {
    for (Operand& o : op.operands) o.value = remapValue(o.value);
    for (ValueId& r : op.results) r = remapValue(r);
    if (op.owner != kNoId) op.owner = newOp[op.owner];
  }
  for (Value& v : values)
    if (v.producer != kNoId) v.producer = newOp[v.producer];
  for (auto* list : {&graph.inputs, &graph.parameters, &graph.outputs})
    for (ValueId& v : *list) v = remapValue(v);
  std::vector<OpId> order;
  order.reserve(graph.order.size());
  for (OpId id : graph.order)
    if (!erase[id]) order.push_back(newOp[id]);
  graph.ops = std::move(ops);
  graph.values = std::move(values);
  graph.order = std::move(order);
  return newValue;
}

}  // namespace irc
