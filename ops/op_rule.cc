#include "ops/op_rule.h"

#include <cstring>
#include <string_view>
#include <type_traits>
#include <variant>

#include "ops/op_family.h"

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

std::optional<OpRule> buildRule(const OpDef& def, const std::vector<TensorType>& operands,
                                const std::vector<Attribute>& constants, const AttrMap& attrs,
                                const std::vector<TensorType>& results) {
  return rulesOf(def).rule({def, operands, constants, attrs, results});
}

namespace {

void appendText(IntKey& key, std::string_view text) {
  key.push_back(static_cast<int64_t>(text.size()));
  key.insert(key.end(), text.begin(), text.end());
}

void appendDouble(IntKey& key, double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  key.push_back(bits);
}

void appendType(IntKey& key, const TensorType& type) {
  key.push_back(static_cast<int64_t>(type.dtype));
  appendList(key, type.shape);
}

// Every alternative written whole behind its index: equal keys mean equal attributes.
void appendAttribute(IntKey& key, const Attribute& attr) {
  key.push_back(static_cast<int64_t>(attr.index()));
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t>) key.push_back(static_cast<int64_t>(v));
        else if constexpr (std::is_same_v<T, double>) appendDouble(key, v);
        else if constexpr (std::is_same_v<T, std::string>) appendText(key, v);
        else if constexpr (std::is_same_v<T, IntTuple>) appendList(key, v);
        else if constexpr (std::is_same_v<T, DType>) key.push_back(static_cast<int64_t>(v));
        else {
          key.push_back(static_cast<int64_t>(v.dtype));
          appendDouble(key, v.value);
        }
      },
      attr);
}

}  // namespace

std::optional<OpRule> RuleCache::ruleOf(const Graph& graph, const Op& op) {
  key_.clear();
  appendText(key_, op.type);
  key_.push_back(static_cast<int64_t>(op.operands.size()));
  for (const Operand& o : op.operands) {
    key_.push_back(o.isValue());
    if (o.isValue()) appendType(key_, graph.value(o.value).type);
    else appendAttribute(key_, *o.constant);
  }
  key_.push_back(static_cast<int64_t>(op.results.size()));
  for (ValueId r : op.results) appendType(key_, graph.value(r).type);
  key_.push_back(static_cast<int64_t>(op.attrs.size()));
  for (const auto& [name, value] : op.attrs) {
    appendText(key_, name);
    appendAttribute(key_, value);
  }
  auto it = rules_.find(key_);
  if (it == rules_.end()) {
    if (rules_.size() >= kLimit) rules_.clear();  // a model with no repeats: memory stays bounded
    it = rules_.emplace(key_, irc::ruleOf(graph, op)).first;
  }
  return it->second;
}

}  // namespace irc
