#pragma once
// Appends the ops a pass inserts (redistributions, forward ops, replace graphs) to the graph and
// to the new execution order, within the bound on inserted nodes (docs/limits.md).
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace irc {

// Thrown when a compile would insert more than kMaxInsertedNodes ops.
struct InsertionLimitReached {};

class OpInserter {
 public:
  // The ops it adds carry no rank's groups or bounds: dumps derive them (OpForRank), shape
  // slicing writes them into each rank's graph.
  explicit OpInserter(Graph& g) : graph_(g) {}

  // Appends an inserted op; returns its (first) result. Appends to graph.ops and graph.values:
  // no reference into them survives a call.
  ValueId add(std::string name, std::string instance, std::string type, std::vector<Operand> operands, AttrMap attrs,
              std::vector<TensorType> results, std::shared_ptr<const RedistStep> step, std::string reason);

  // The owner and role of the ops added from now on.
  void setOwner(OpId owner, InsertedRole role) {
    owner_ = owner;
    role_ = role;
  }

  int64_t insertedCount() const { return inserted_; }

  std::vector<OpId> order;  // the new execution order, model ops included by the pass

 private:
  Graph& graph_;
  OpId owner_ = kNoId;
  InsertedRole role_ = InsertedRole::None;
  int64_t inserted_ = 0;
};

}  // namespace irc
