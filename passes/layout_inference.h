#pragma once
// Pipeline slot 2 (dump `tensor_layout`).
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createLayoutInferencePass(const CompileOptions& options);

// The index among an op's tensor operands of operand `operandIndex` (constants skipped).
int tensorOperandIndex(const Op& op, int operandIndex);

// The two questions every later pass asks of the layouts layout inference wrote (it writes an
// op's layouts and every Value.layout; propagation only decides a result held apart, and
// reduction fusion leaves a fused result partial):
// the layout consumers see value `v` in: an input's or parameter's held layout, else the final
// layout of the model op behind it (back through the ops inserted after it);
const TensorLayout& layoutOfValue(const Graph& graph, ValueId v);
// the layout model op `op` needs its operand `operandIndex` (an index into op.operands) in.
const TensorLayout& layoutNeeded(const Op& op, int operandIndex);

}  // namespace irc
