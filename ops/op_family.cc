// The defaults every family starts from: a strategy with one tuple per tensor operand, no
// out_strategy, no local kernel, and a sample call with one float32 [8, 8] operand.
#include "ops/op_family.h"

#include <fmt/format.h>

#include "ir/layout_notation.h"

namespace irc {

std::vector<TensorValue> OpFamilyRules::evaluate(const Op& op, const KernelInputs&, const std::vector<TensorType>&) const {
  throw InternalError(fmt::format("the reference interpreter runs collective '{}' only across ranks", op.type));
}

std::vector<SharedValue> OpFamilyRules::evaluateOnGroup(const RedistStep& step, const std::vector<const TensorValue*>&) const {
  throw InternalError(fmt::format("a step of kind {} is no collective", static_cast<int>(step.kind)));
}

OpSample sampleOf(const OpDef& def) {
  OpSample s{{{DType::Float32, {8, 8}}}, {}, {}, ""};
  for (const auto& a : def.attrs)
    if (a.defaultValue) s.attrs[a.name] = *a.defaultValue;
  def.rules->sample(def, s);
  return s;
}

std::optional<StrategyError> OpFamilyRules::readSplits(const OpRule& rule, const OpView& op, const ShardStrategy& strategy,
                                                       std::vector<int64_t>& splits) const {
  size_t tensors = rule.operands.size();
  if (strategy.size() != tensors)
    return StrategyError{
        fmt::format("{} '{}' has {} tensor inputs; the strategy has {} tuples", op.type, op.name, tensors, strategy.size()), -1};
  std::vector<std::string> setBy(rule.factorCount());  // "dim 1 of 'x'": where a factor's split came from
  for (size_t k = 0; k < tensors; ++k) {
    const Shape& shape = op.operandShapes[k];
    const std::string& tensor = op.operandNames[k];
    int operand = static_cast<int>(k);
    if (strategy[k].size() != shape.size())
      return StrategyError{fmt::format("{} '{}': strategy {} for '{}' has {} entries; it has rank {}", op.type, op.name,
                                       formatIntTuple(strategy[k]), tensor, strategy[k].size(), shape.size()),
                           operand};
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t s = strategy[k][d];
      if (!splitsEvenly(shape[d], s))
        return StrategyError{fmt::format("{} '{}': {} does not divide dim {} of '{}' (size {}); valid: {}", op.type, op.name, s,
                                         d, tensor, shape[d], divisorsText(shape[d])),
                             operand};
      const auto& factors = rule.operands[k][d];
      if (factors.empty()) {
        if (s != 1)
          return StrategyError{fmt::format("{} '{}': dim {} of '{}' has size 1 and broadcasts; it cannot be split ({} given)",
                                           op.type, op.name, d, tensor, s),
                               operand};
        continue;
      }
      int f = factors[0];
      if (splits[f] != 0 && splits[f] != s)
        return StrategyError{
            fmt::format("{} '{}': dim {} of '{}' is split {} ways but {} is split {} ways; they are the same dim "
                        "of the op (factor {}) and must be split alike",
                        op.type, op.name, d, tensor, s, setBy[f], splits[f], factorName(f)),
            operand};
      if (splits[f] == 0) setBy[f] = fmt::format("dim {} of '{}'", d, tensor);
      splits[f] = s;
    }
  }
  return std::nullopt;
}

ShardStrategy OpFamilyRules::strategyOf(const OpRule& rule, const OpSharding& s) const {
  ShardStrategy out;
  for (const auto& dims : rule.operands) out.push_back(splitCounts(dims, s));
  return out;
}

std::optional<StrategyError> OpFamilyRules::checkOutStrategy(const OpRule&, const OpView& op, const std::vector<int64_t>&,
                                                             const ShardStrategy&) const {
  return StrategyError{
      fmt::format("{} '{}' takes no out_strategy (only MatMul does, to reduce-scatter its output)", op.type, op.name), -1};
}

std::vector<int> SavedForBackward::operandsKeptWhenAllTrain() const {
  std::vector<int> kept = operands;
  if (operands.size() + forOtherOperands.size() > 1) kept.insert(kept.end(), forOtherOperands.begin(), forOtherOperands.end());
  return kept;
}

SavedForBackward factorsSaved(const Op& op) {
  SavedForBackward saved;
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (op.operands[i].isValue()) saved.forOtherOperands.push_back(static_cast<int>(i));
  return saved;
}

SavedForBackward OpFamilyRules::savedForBackward(const Op& op) const {
  SavedForBackward saved;
  for (size_t i = 0; i < op.operands.size(); ++i)
    if (op.operands[i].isValue()) saved.operands.push_back(static_cast<int>(i));
  return saved;
}

}  // namespace irc
