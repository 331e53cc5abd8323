#pragma once
// The plan's query API: the questions every pass after layout inference asks of the layouts it
// wrote (it writes an op's layouts and every Value.layout; propagation only decides a result held
// apart, and reduction fusion leaves a fused result partial). A floor of its own, above the pass
// manager and below the planners, analyses and passes that ask (docs/architecture.md).
#include "ir/graph.h"
#include "ir/tensor_layout.h"

namespace irc {

// The index among an op's tensor operands of operand `operandIndex` (constants skipped).
int tensorOperandIndex(const Op& op, int operandIndex);

// The layout consumers see value `v` in: an input's or parameter's held layout, else the final
// layout of the model op behind it (back through the ops inserted after it).
const TensorLayout& layoutOfValue(const Graph& graph, ValueId v);
// The layout model op `op` needs its operand `operandIndex` (an index into op.operands) in.
const TensorLayout& layoutNeeded(const Op& op, int operandIndex);

}  // namespace irc
