#pragma once
// Execution order and cycle detection over the op graph. Boost.Graph works behind this
// interface; callers see only op ids.
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace irc {

struct TopologyResult {
  std::vector<OpId> order;  // every op, topological; ties go to the lower model index / id
  std::vector<OpId> cycle;  // when the graph has a cycle: the ops of one cycle, ascending id
  bool acyclic() const { return cycle.empty(); }
};

// Orders `graph.ops` so that producers come before consumers; among ops that are ready at the
// same time the one with the smallest (modelIndex, id) goes first, so the order is the model's
// own wherever the model already lists producers first.
TopologyResult topologicalOrder(const Graph& graph);

}  // namespace irc
