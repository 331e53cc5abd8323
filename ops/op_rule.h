#pragma once
// An op's factor rule (ir/factor_rule.h) from its family (passes/op_families/).
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/factor_rule.h"
#include "ir/graph.h"
#include "ops/op_defs.h"
#include "ops/int_key.h"

namespace irc {

// The rule of a graph op (nullopt for ops without one: the inserted communication ops).
std::optional<OpRule> ruleOf(const Graph& graph, const Op& op);
// The rule from plain types, for tests and --list-ops.
std::optional<OpRule> buildRule(const OpDef& def, const std::vector<TensorType>& operands,
                                const std::vector<Attribute>& constants, const AttrMap& attrs,
                                const std::vector<TensorType>& results);

// ruleOf, computed once per distinct (op type, operand and result types, constants, attrs): a
// rule is a function of those alone, and the ops of repeated layers ask the same ones.
class RuleCache {
 public:
  std::optional<OpRule> ruleOf(const Graph& graph, const Op& op);

 private:
  static constexpr size_t kLimit = size_t{1} << 14;
  IntKey key_;  // reused: built for every op
  std::unordered_map<IntKey, std::optional<OpRule>, IntKeyHash> rules_;
};

}  // namespace irc
