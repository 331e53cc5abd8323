#include "passes/op_rule.h"

#include "passes/op_families/op_family.h"

namespace irc {

std::optional<OpRule> ruleOf(const Graph& graph, const Op& op) {
  const OpDef* def = findOpDef(op.type);
  if (!def) return std::nullopt;
  std::vector<TensorType> operands, results;
  std::vector<Attribute> constants;
  for (const Operand& o : op.operands) {
    if (o.isValue()) operands.push_back(graph.value(o.value).type);
    else constants.push_back(*o.constant);
  }
  for (ValueId r : op.results) results.push_back(graph.value(r).type);
  return buildRule(*def, operands, constants, op.attrs, results);
}

std::optional<OpRule> buildRule(const OpDef& def, const std::vector<TensorType>& operands, const std::vector<Attribute>& constants,
                                const AttrMap& attrs, const std::vector<TensorType>& results) {
  return rulesOf(def.family).rule({def, operands, constants, attrs, results});
}

}  // namespace irc
