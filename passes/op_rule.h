#pragma once
// An op's factor rule (ir/factor_rule.h) from its family (passes/op_families/).
#include <optional>
#include <vector>

#include "ir/factor_rule.h"
#include "ir/graph.h"
#include "ir/op_defs.h"

namespace irc {

// The rule of a graph op (nullopt for ops without one: the inserted communication ops).
std::optional<OpRule> ruleOf(const Graph& graph, const Op& op);
// The rule from plain types, for tests and --list-ops.
std::optional<OpRule> buildRule(const OpDef& def, const std::vector<TensorType>& operands, const std::vector<Attribute>& constants,
                                const AttrMap& attrs, const std::vector<TensorType>& results);

}  // namespace irc
