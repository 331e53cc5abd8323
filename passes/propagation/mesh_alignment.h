#pragma once
// A configured op's device-matrix order taken from the layout its operand arrives in.
//
// A plain strategy fixes how many ways each dim splits; MindSpore lays those splits on a device
// matrix in the op's dim order. Where two configured ops split the same dims in different dim
// orders, the in-order matrices disagree on which ranks hold what: Llama 3's context-parallel
// plan splits the tokens [B*S, H] of a projection (DP x CP, TP) and the attention product
// [B, heads, S, S] (DP, TP, CP) — heads before the sequence — and read in order every layer
// would gather the sequence and slice it again. The authors ran one mesh [dp, cp, tp]: the
// projection's layout carried through the Reshape and Transpose to the product. So before
// propagation, a configured plain strategy is laid on the mesh of the layout one of its operands
// arrives in from the nearest configured producers (through the unconfigured ops between, each
// taking its operands' layouts exactly, the branches of a rotary embedding agreeing), when that
// gives every operand the same split counts as the strategy; otherwise MindSpore's order stands.
// docs/deviations.md.
#include "ir/graph.h"
#include "passes/propagation/propagation_common.h"

namespace irc {

// Re-lays configured plain strategies in model order; the ops re-laid.
std::vector<OpId> alignConfiguredMeshes(Graph& graph, const PropagationInput& in);

}  // namespace irc
