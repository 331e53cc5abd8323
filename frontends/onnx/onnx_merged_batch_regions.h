#pragma once
// Attention written with 3-D batched matmuls (OPT's and BART's eager attention, torch's bmm
// path) merges batch and heads into one dim: Reshape [b, h, s, d] -> [b*h, s, d], bmm, softmax,
// bmm, and Reshape back to [b, h, s, d]. A head split is a split of the merged dim's minor
// factor, which is no block of the merged dim, so tensor parallelism would gather q, k and v and
// cut them again, where DTensor (which runs the module on each rank's local heads) communicates
// nothing. Between the merge and the split back, every op treats dim 0 as a batch: the region
// is rewritten on the unmerged dims [b, h, ...] and both Reshapes disappear. Same numbers.
#include <vector>

#include "ir/graph.h"

namespace irc::onnx_import {

// Rewrites every region of values whose dim 0 is the merge of the same leading dims, entered
// only by merging Reshapes, read only by ops that keep dim 0 a batch (Transpose keeping dim 0,
// batched MatMul, Softmax on another axis, elementwise ops whose other operands broadcast below
// dim 0) and left only through Reshapes that split dim 0 back. Returns how many regions it
// rewrote; the Reshapes that disappear are marked in `erase` (sized to the graph's ops) for the
// caller to remove (GraphBuilder::eraseOps).
int unmergeBatchRegions(Graph& graph, std::vector<bool>& erase);

}  // namespace irc::onnx_import
