#pragma once
// Of each op's points, the share that are routed tokens' work: 1 outside a mixture of experts'
// slots; inside them (from a MoeDispatch to its MoeCombine) the slots the tokens' choices fill,
// S·K / (E·C) of a dispatch's [G, E, C, H] under balanced routing, at most 1. The rest is
// capacity padding (a `capacity_factor` above 1, a dropless run sized at its busiest expert, one
// slot an expert when experts outnumber the choices): hardware FLOPs, not model FLOPs.
#include <vector>

#include "ir/graph.h"

namespace irc {

// Per op (by OpId).
std::vector<double> routedShares(const Graph& graph);

// Per value (by ValueId): of a parameter the experts' products read ([E, ..] inside a dispatch's
// slots), the share one token's forward multiplies with, K / E; 1 for every other value.
std::vector<double> activeParameterShares(const Graph& graph);

}  // namespace irc
