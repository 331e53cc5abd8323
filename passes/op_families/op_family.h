#pragma once
// Everything irc knows about how one op family runs in parallel, in one place per family
// (docs/adding-an-op.md): its factor rule, its strategy checks, its forward ops and replace
// graph, its local-shape rule, and what verify must know of its index operands. The passes
// dispatch through rulesOf(op) and never compare op type names.
//
// The op's definition (operands, attributes, kernels, strategy form) is in ir/op_defs.cc; its
// shape inference in ir/shape_inference.cc and reference semantics in ir/reference_ops.cc.
#include <optional>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "passes/op_rule.h"
#include "passes/op_sharding.h"

namespace irc {

class OpInserter;

// What a rule is computed from: the op's definition, its tensor operands' and results' types,
// its constant operands (in operand order) and its attributes.
struct RuleInputs {
  const OpDef& def;
  const std::vector<TensorType>& operands;
  const std::vector<Attribute>& constants;
  const AttrMap& attrs;
  const std::vector<TensorType>& results;
};

// State a replace graph carries from the ops inserted before the op to those after it.
struct ReplaceGraph {
  bool active = false;
  ValueId mask = kNoId;  // Gather's in-range mask
  int nextIndex = 0;     // the next `.replace.<i>`
};

class OpFamilyRules {
 public:
  virtual ~OpFamilyRules() = default;

  // The factor rule (ops.md's "rule" column); nullopt for ops without one (the inserted
  // communication ops).
  virtual std::optional<OpRule> rule(const RuleInputs& in) const = 0;

  // --- Strategies (parallel-semantics.md §2) ---
  // Reads the factors' split counts from a configured strategy; the default reads one tuple per
  // tensor operand.
  virtual std::optional<StrategyError> readSplits(const OpRule& rule, const OpView& op, const ShardStrategy& strategy,
                                                  std::vector<int64_t>& splits) const;
  // The strategy a sharding amounts to, in the form the family's strategies are written.
  virtual ShardStrategy strategyOf(const OpRule& rule, const OpSharding& s) const;
  // Why a replicated factor may not be split, for messages ("its softmax axis").
  virtual std::string_view replicatedWhy() const { return "a dim the op needs whole"; }
  // MindSpore's checks beyond what the factor rule expresses, on the factors' split counts.
  virtual std::optional<StrategyError> checkSplits(const OpRule&, const OpView&, const std::vector<int64_t>&) const {
    return std::nullopt;
  }
  // True where MindSpore puts the repeated-calculation dim on the left of the device matrix.
  virtual bool repeatOnLeft(const OpRule&, const std::vector<int64_t>&) const { return false; }
  // An out_strategy: the output layout it requests, or an error (only MatMul takes one).
  virtual std::variant<TensorLayout, StrategyError> outputFromOutStrategy(const OpRule& rule, const OpView& op,
                                                                         const std::vector<int64_t>& splits,
                                                                         const OpSharding& s, const ShardStrategy& out) const;
  // The tensor operand whose dim 0 data parallelism splits.
  virtual int batchOperand() const { return 0; }

  // --- Forward ops ---
  // What the op does that leaves its output partial, for the AllReduce's reason line.
  virtual std::string_view partialWhy() const { return "splits its contracted dim"; }
  // True where the reduced partials are then divided by the group size (ReduceMean).
  virtual bool averagesPartials(const OpDef&) const { return false; }
  // False where the optimal planner may not move the op's reduction onto its consumer's edge
  // (a masked lookup's sum must follow its Mul).
  virtual bool reductionMayMoveToEdge() const { return true; }

  // --- Replace graph (redistribution pass) ---
  // Ops inserted right before the op that rewrite its operands (may rename the op).
  virtual void insertBefore(Graph&, OpInserter&, OpId, ReplaceGraph&) const {}
  // Ops inserted right after it; returns the value consumers read instead of its result.
  virtual ValueId insertAfter(Graph&, OpInserter&, OpId, const ReplaceGraph&, ValueId result) const { return result; }

  // --- Local shapes (shape slicing) ---
  // Rewrites the op's constants and attributes for its rank's slices (Reshape's target shape).
  virtual void localize(Op&) const {}

  // --- verify ---
  // The exclusive bound of the indices operand `operand` holds, or -1 where it is no index.
  virtual int64_t indexBound(const Graph&, const Op&, size_t /*operand*/) const { return -1; }
};

const OpFamilyRules& rulesOf(OpFamily family);
inline const OpFamilyRules& rulesOf(const Op& op) { return rulesOf(op.family()); }

}  // namespace irc
