#pragma once
// Pipeline slot 2 (dump `tensor_layout`).
#include <memory>

#include "passes/compile_options.h"
#include "passes/pass.h"

namespace irc {

std::unique_ptr<Pass> createLayoutInferencePass(const CompileOptions& options);

// The index among an op's tensor operands of operand `operandIndex` (constants skipped).
int tensorOperandIndex(const Op& op, int operandIndex);

}  // namespace irc
