#include "ir/factor_rule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace irc {

std::string factorName(int f) {
  static const char* kNames = "ijklmnopqrstuv";
  return f < 14 ? std::string(1, kNames[f]) : fmt::format("f{}", f);
}

namespace {

std::string printTensors(const std::vector<DimFactors>& tensors) {
  std::vector<std::string> parts;
  for (const DimFactors& dims : tensors) {
    std::vector<std::string> entries;
    for (const auto& factors : dims) {
      if (factors.empty()) {
        entries.push_back("1");
      } else if (factors.size() == 1) {
        entries.push_back(factorName(factors[0]));
      } else {
        std::string compound;
        for (int f : factors) compound += factorName(f);
        entries.push_back("(" + compound + ")");
      }
    }
    parts.push_back(fmt::format("[{}]", fmt::join(entries, ", ")));
  }
  return fmt::format("({})", fmt::join(parts, ", "));
}

std::string factorSet(const OpRule& r, FactorKind kind) {
  std::vector<std::string> names;
  for (int f = 0; f < r.factorCount(); ++f)
    if (r.factorKinds[f] == kind) names.push_back(factorName(f));
  return fmt::format("{{{}}}", fmt::join(names, ", "));
}

}  // namespace

std::string OpRule::print() const {
  std::string out = printTensors(operands) + "->" + printTensors(results);
  bool hasReduction = false, hasReplicated = false;
  for (FactorKind k : factorKinds) {
    hasReduction |= k == FactorKind::Reduction;
    hasReplicated |= k == FactorKind::Replicated;
  }
  if (hasReduction) out += " reduction=" + factorSet(*this, FactorKind::Reduction);
  if (hasReplicated) out += " replicated=" + factorSet(*this, FactorKind::Replicated);
  return out;
}

}  // namespace irc
