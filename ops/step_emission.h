#pragma once
// A redistribution step as ops (the collectives' home, beside ops/collective.h and
// ops/inserted_ops.h): the inserted ops each step kind becomes, with MindSpore's attributes, and
// the reason line a dump prints for it. Forward ops, edge conversions, constraints and mirrors
// are all emitted here.
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "ir/graph.h"
#include "ops/op_inserter.h"

namespace irc {

// "device axis 1, 0": the step's axes counted from the right, as MindSpore's tensor maps count them.
std::string axisText(const RedistStep& s);

// Emits the ops of one step after `input`; `names(type)` gives the next inserted op's name and
// instance. Returns the step's result.
ValueId emitStep(OpInserter& ins, const std::shared_ptr<const RedistStep>& shared, ValueId input, DType dtype,
                 const std::string& reason, const std::function<std::pair<std::string, std::string>(const std::string&)>& names);

// Why a conversion of `consumer`'s operand `input` (from `producer`) takes the step; empty for
// steps whose reason their emitter writes (a mirror, a transfer, a vocabulary offset).
std::string stepReason(const RedistStep& s, const std::string& consumer, int input, const std::string& producer);

}  // namespace irc
