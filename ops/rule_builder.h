#pragma once
// Helpers the families' rules are written with.
#include <numeric>
#include <vector>

#include "ir/shape.h"
#include "ops/op_rule.h"

namespace irc::families {

class RuleBuilder {
 public:
  int factor(int64_t size, FactorKind kind = FactorKind::PassThrough) {
    rule.factorSizes.push_back(size);
    rule.factorKinds.push_back(kind);
    return rule.factorCount() - 1;
  }
  // One new factor per dim of `shape`; returns their indices.
  std::vector<int> factorsFor(const Shape& shape) {
    std::vector<int> f;
    for (int64_t d : shape) f.push_back(factor(d));
    return f;
  }
  // `mindsporeOrder` empty: MindSpore's device matrix lists the factors in creation order.
  OpRule done(std::vector<int> mindsporeOrder = {}) {
    if (mindsporeOrder.empty()) {
      mindsporeOrder.resize(rule.factorCount());
      std::iota(mindsporeOrder.begin(), mindsporeOrder.end(), 0);
    }
    rule.mindsporeOrder = std::move(mindsporeOrder);
    return std::move(rule);
  }
  OpRule rule;
};

// One factor per dim.
inline DimFactors single(const std::vector<int>& factors) {
  DimFactors dims;
  for (int f : factors) dims.push_back({f});
  return dims;
}

// The dims an axis operand or attribute names (an int or a tuple; the empty tuple is all).
std::vector<bool> namedDims(const Attribute& axisAttr, int64_t rank);

// Same factors in and out, one per dim; `replicated` marks dims that may not be split.
OpRule sameShapeRule(const Shape& shape, const std::vector<bool>& replicated = {});

// One operand, one result of its rank: a dim that keeps its size passes through; a dim whose size
// changes (padded, resized) is a replicated factor on each side.
OpRule keptDimsRule(const Shape& in, const Shape& out);

}  // namespace irc::families
