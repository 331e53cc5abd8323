#include "ir/graph.h"

#include <fmt/format.h>

namespace irc {

SourceLoc Op::attrLoc(std::string_view attr) const {
  for (const auto& [key, loc] : attrLocs)
    if (key == attr) return loc;
  return loc;
}

ValueId Graph::addGraphInput(std::string valueName, TensorType type, ValueKind kind, SourceLoc loc) {
  ValueId id = static_cast<ValueId>(values.size());
  Value v;
  v.name = std::move(valueName);
  v.type = std::move(type);
  v.kind = kind;
  v.loc = loc;
  values.push_back(std::move(v));
  (kind == ValueKind::Input ? inputs : parameters).push_back(id);
  return id;
}

OpId Graph::addOp(Op op, const std::vector<TensorType>& resultTypes) {
  OpId id = static_cast<OpId>(ops.size());
  op.results.clear();
  for (size_t i = 0; i < resultTypes.size(); ++i) {
    Value v;
    v.name = i == 0 ? op.name : op.name + ":" + std::to_string(i);
    v.type = resultTypes[i];
    v.kind = ValueKind::OpResult;
    v.producer = id;
    v.resultIndex = static_cast<int>(i);
    v.loc = op.loc;
    op.results.push_back(static_cast<ValueId>(values.size()));
    values.push_back(std::move(v));
  }
  ops.push_back(std::move(op));
  return id;
}

const std::string& Graph::moduleOf(const Op& op) const {
  static const std::string none;
  return op.modulePath >= 0 && static_cast<size_t>(op.modulePath) < modulePaths.size() ? modulePaths[op.modulePath] : none;
}

std::optional<ValueId> Graph::findValue(std::string_view valueName) const {
  // `op:0` is the op's first result, whose value carries the op's plain name.
  if (valueName.size() > 2 && valueName.substr(valueName.size() - 2) == ":0") valueName.remove_suffix(2);
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == valueName) return static_cast<ValueId>(i);
  return std::nullopt;
}

std::vector<std::vector<Use>> computeUses(const Graph& graph) {
  std::vector<std::vector<Use>> uses(graph.values.size());
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (op.operands[i].isValue()) uses[op.operands[i].value].push_back({id, static_cast<int>(i)});
  }
  return uses;
}

}  // namespace irc
