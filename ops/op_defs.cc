#include "ops/op_defs.h"

#include <fmt/format.h>

#include "ir/limits.h"
#include "ops/op_family.h"

namespace irc {

bool OpDef::hasAttr(std::string_view attrName) const {
  for (const auto& a : attrs)
    if (a.name == attrName) return true;
  return false;
}

const OperandSpec* OpDef::operand(std::string_view operandName) const {
  for (const auto& o : operands)
    if (o.name == operandName) return &o;
  return nullptr;
}

bool OpDef::tupleResult() const { return results > 1 || !resultCountAttr.empty(); }

int OpDef::resultCount(std::optional<int64_t> countAttrValue) const {
  if (resultCountAttr.empty()) return results;
  // Past the limit (or absent), shape inference reports the located error; one result meanwhile.
  if (countAttrValue && *countAttrValue >= 1 && *countAttrValue <= kMaxOpResults) return static_cast<int>(*countAttrValue);
  return 1;
}

namespace {

// The op-type index: open addressing over a power-of-two table at most a quarter full, keyed
// by FNV-1a of the name. Every op of a graph is looked up by every pass and every dump (a
// quarter of a million lookups on a 300-layer model): std::unordered_map's murmur hash and
// prime modulo made that 160 instructions a lookup, this about a third of it.
class OpTypeIndex {
 public:
  explicit OpTypeIndex(const std::vector<OpDef>& defs) {
    while (slots_.size() < defs.size() * 4) slots_.resize(slots_.size() * 2);
    for (const OpDef& d : defs) {
      size_t i = hash(d.type) & mask();
      while (slots_[i]) i = (i + 1) & mask();
      slots_[i] = &d;
    }
  }
  const OpDef* find(std::string_view type) const {
    for (size_t i = hash(type) & mask();; i = (i + 1) & mask()) {
      const OpDef* d = slots_[i];
      if (!d || d->type == type) return d;
    }
  }

 private:
  static size_t hash(std::string_view s) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return static_cast<size_t>(h ^ (h >> 32));
  }
  size_t mask() const { return slots_.size() - 1; }
  std::vector<const OpDef*> slots_ = std::vector<const OpDef*>(64);
};

}  // namespace

const OpDef* findOpDef(std::string_view type) {
  static const OpTypeIndex index(allOpDefs());
  return index.find(type);
}

const OpDef& defOf(const Op& op) {
  const OpDef* d = findOpDef(op.type);
  if (!d) throw InternalError(fmt::format("op '{}' has the unknown type '{}'", op.name, op.type));
  return *d;
}

StrategyForm strategyFormOf(const OpDef& def) { return def.rules->strategyForm(); }

bool ignoresConfiguredStrategy(const OpDef& def) { return def.rules->ignoresConfiguredStrategy(); }

std::vector<std::string> modelOpTypeNames() {
  std::vector<std::string> names;
  for (const auto& d : allOpDefs())
    if (!d.insertedOnly) names.push_back(d.type);
  return names;
}

}  // namespace irc
