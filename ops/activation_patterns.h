#pragma once
// Exporters write torch's fused activations out in elementary ops: the exact GELU as
// `0.5 * x * (1 + erf(x / sqrt 2))` (TorchScript, and the dynamo exporter below opset 20) and
// SiLU as `x * sigmoid(x)` (ONNX has no SiLU). The same numbers, but each step would be an op of
// its own to shard, dump and — in training — keep for backward, where torch's GELU and SiLU
// keep their input only. The import fuses them back into the Unary family's ExactGeLU and SiLU.
#include <vector>

#include "ir/graph.h"

namespace irc {

// Rewrites each written-out GELU or SiLU whose intermediate values nothing else reads (and the
// graph does not return) into one op on x, named after the form's last op: that op becomes the
// ExactGeLU or SiLU, the others are marked in `erase` (sized to the graph's ops) for the caller
// to remove (ir/graph_edit.h). Returns how many it fused.
int fuseWrittenOutActivations(Graph& graph, std::vector<bool>& erase);

}  // namespace irc
