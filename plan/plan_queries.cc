#include "plan/plan_queries.h"

#include <fmt/format.h>

#include "ir/diagnostics.h"
#include "ops/inserted_ops.h"

namespace irc {

int tensorOperandIndex(const Op& op, int operandIndex) {
  int k = 0;
  for (int i = 0; i < operandIndex; ++i) k += op.operands[i].isValue() ? 1 : 0;
  return k;
}

const TensorLayout& layoutOfValue(const Graph& graph, ValueId v) {
  const Value& value = graph.value(modelValueBehind(graph, v));
  if (value.producer != kNoId && graph.op(value.producer).inserted())
    throw InternalError(fmt::format("inserted op '{}' has no input", graph.op(value.producer).name));
  if (!value.layout) throw InternalError(fmt::format("'{}' has no layout: layout inference has not run", value.name));
  return *value.layout;
}

const TensorLayout& layoutNeeded(const Op& op, int operandIndex) {
  return op.parallel->inputLayouts.at(tensorOperandIndex(op, operandIndex));
}

}  // namespace irc
