#pragma once
// Attention as the dynamo exporter decomposes scaled-dot-product attention transposes the keys
// through a round trip: Reshape [b, h, s, d] -> [b*h, s, d], Transpose (0, 2, 1), Reshape back
// to [b, h, d, s]. The merged dim b*h cannot carry a head split while b stays whole (a split of
// a minor factor is no block of the merged dim), so tensor parallelism would gather the keys
// and cut them again. The Transpose commutes with the merge: it is done on [b, h, s, d] with
// perm (0, 1, 3, 2) and the first Reshape disappears. Same numbers, one op fewer.
#include <map>

#include "ir/graph.h"
#include "ir/tensor_value.h"

namespace irc::onnx_import {

// Rewrites every Reshape (merging leading dims into dim 0) -> Transpose (keeping dim 0) ->
// Reshape chain whose intermediate results have no other reader; returns how many it folded.
// `parameterData` is keyed by value id and is renumbered with the graph.
int foldReshapeRoundTrips(Graph& graph, std::map<ValueId, TensorValue>& parameterData);

}  // namespace irc::onnx_import
