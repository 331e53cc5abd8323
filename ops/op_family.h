#pragma once
// Everything irc knows about one op family, in one file per family (docs/adding-an-op.md): the
// definitions of its ops, their result types, their float64 reference kernel, a sample for
// --list-ops, the factor rule, strategy checks, forward ops and replace graph, the local-shape
// rule, and what verify must know of its index operands. Everything above this floor dispatches
// through an op's definition (defOf(op).rules, rulesOf(op)) and never compares op type names.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_value.h"
#include "ops/op_rule.h"
#include "ops/op_sharding.h"
#include "ops/shape_inference.h"

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

// A sample call of an op, for showing its rule (--list-ops): operand types, constants, attrs.
struct OpSample {
  std::vector<TensorType> operands;
  std::vector<Attribute> constants;
  AttrMap attrs;
  std::string note;  // the sample's shapes when the rule depends on them
};

// A reference kernel's operands: operand i's value, null for constants.
using KernelInputs = std::vector<const TensorValue*>;

// What autograd keeps of one op for its backward: the operand and result indices (tensor
// operands counted with constants, as Op::operands) the gradient reads. A product's factors are
// read only by the other factors' gradients (d(ab)/da reads b), so torch keeps each only where
// another operand needs a gradient: a weight times a constant mask keeps nothing of the mask's
// partner, an activation times a weight keeps the activation.
struct SavedForBackward {
  std::vector<int> operands;  // kept whenever the op has a backward
  std::vector<int> results;
  std::vector<int> forOtherOperands;  // kept only where another operand needs a gradient

  // The operands kept when every tensor operand may need a gradient (a product's factors where
  // it has two or more): for the plan-time estimates that do not follow gradients.
  std::vector<int> operandsKeptWhenAllTrain() const;
};

// A product's (MatMul, Conv, Einsum, Mul): every tensor operand, each for the others' gradients.
SavedForBackward factorsSaved(const Op& op);

// An op's part in a torch nn.Linear or nn.Embedding, as DTensor's ColwiseParallel and
// RowwiseParallel see it: the product of an activation (operand `input`) by the module's weight
// (operand `weight`: [in, out], or [out, in] where transposed, as Gemm's transB), the lookup of
// indices (`input`) in a table (`weight`), the bias (`weight`) added to a product (`input`), or
// the product's scaling (Gemm's alpha).
struct ModulePart {
  enum class Kind { None, Product, Lookup, Bias, Scale } kind = Kind::None;
  int input = -1;
  int weight = -1;
  bool weightTransposed = false;
};

// How an op runs in a lockstep run of every rank (verify/spmd_simulator.h): alone on each rank
// (evaluate), as a collective over the groups of its step (evaluateOnGroup), or as a pipeline
// Receive of what its Send passed on at the rank of the same position in the sending stage.
enum class RunsAs { EachRank, Collective, Receive };

// A value every member of a group may share (a collective's result that all receive alike).
using SharedValue = std::shared_ptr<const TensorValue>;

class OpFamilyRules {
 public:
  virtual ~OpFamilyRules() = default;

  // --- Definition ---
  // Appends the definitions of the family's ops (in ops.md's order).
  virtual void define(std::vector<OpDef>& defs) const = 0;
  // The result types from the operand types, constants and attributes (defaults filled in);
  // ops/shape_inference.h's inferResultTypes adds the checks every op shares.
  virtual InferResult inferTypes(const OpDef& def, const std::vector<InferOperand>& operands, const AttrMap& attrs) const = 0;
  // The float64 reference semantics (spec/ops.md's numpy expressions). Collectives need several
  // ranks and run in the SPMD simulator; the default says so.
  virtual std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& operands,
                                            const std::vector<TensorType>& results) const;
  // Adjusts the sample call (one float32 [8, 8] operand, attribute defaults) to one the op takes.
  virtual void sample(const OpDef&, OpSample&) const {}
  // How the op's strategy is written; whether a configured one is ignored (Cast).
  virtual StrategyForm strategyForm() const { return StrategyForm::PerOperand; }
  virtual bool ignoresConfiguredStrategy() const { return false; }

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
  // An out_strategy: nothing where the family takes it (it asks for result 0's partial sum
  // reduce-scattered on dim 0), else why not (only MatMul takes one).
  virtual std::optional<StrategyError> checkOutStrategy(const OpRule& rule, const OpView& op, const std::vector<int64_t>& splits,
                                                        const ShardStrategy& out) const;
  // Shardy's op priority: elementwise-like ops (and reshapes, transposes) propagate at the first
  // levels, before ops that contract or reduce.
  virtual bool elementwiseForPropagation() const { return false; }
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

  // --- Running on every rank (verify/spmd_simulator.h) ---
  virtual RunsAs runsAs(const OpDef&) const { return RunsAs::EachRank; }
  // A collective's results on the members of one group, in the group's order, from their
  // operands (`members`, also in the group's order); a result all members receive alike is one
  // shared value.
  virtual std::vector<SharedValue> evaluateOnGroup(const RedistStep& step, const std::vector<const TensorValue*>& members) const;

  // --- Memory (cost/memory_estimate.h) ---
  // What a training step keeps of the op until its backward. The default keeps every tensor
  // operand (a MatMul's both sides, a Conv's input and kernel); shape-only ops, sums and the
  // collectives keep nothing.
  virtual SavedForBackward savedForBackward(const Op& op) const;
  // True where the result is a view of operand 0 (torch's view/unsqueeze/squeeze of a
  // contiguous tensor, a weight's transpose): it holds no memory of its own.
  virtual bool resultIsView(const Graph&, const Op&) const { return false; }
  // The operand whose buffer torch's kernel writes the result into, -1 for none: a Linear's
  // bias is added into its product (addmm, or `out.add_(bias)`), a Conv's into its output, so
  // the product and the biased result are one buffer. Memory takes it where nothing else reads
  // that operand (cost/memory_estimate.h).
  virtual int accumulatesInto(const Graph&, const Op&) const { return -1; }

  // --- Import rewrites (frontends/onnx/onnx_merged_batch_regions.h) ---
  // True where dim 0 of every operand and result is one batch the op passes through untouched,
  // so the op may run with that dim unmerged into several leading dims.
  virtual bool passesBatchDim0(const Graph&, const Op&) const { return false; }
  // Rewrites the op's dim arguments for `extra` more leading batch dims (a Transpose's perm).
  virtual void prependBatchDims(Op&, int64_t /*extra*/) const {}

  // --- Import (frontends/onnx/onnx_trainable.h) ---
  // True where operand `operand` is a module's weight as exporters write it (a Linear's or
  // Conv's weight, an embedding table, a norm's scale, a bias): a constant read there trains.
  virtual bool operandIsWeight(const Graph&, const Op&, size_t /*operand*/) const { return false; }

  // --- DTensor's module styles (frontends/yaml/plan_modules.cc) ---
  // The op's part in a Linear or an Embedding, if it can play one (the graph decides whether
  // its weight is a parameter).
  virtual ModulePart modulePart(const Op&) const { return {}; }

  // --- the step on a cluster ---
  // What the op can be inside a fused attention kernel (FlashAttention), between the scores'
  // product and the probabilities' product: the softmax, or an elementwise op on the scores (a
  // scale, a mask added or selected).
  enum class AttentionPart { None, Softmax, Elementwise };
  virtual AttentionPart attentionPart(const Op&) const { return AttentionPart::None; }

  // --- verify ---
  // The exclusive bound of the indices operand `operand` holds, or -1 where it is no index.
  virtual int64_t indexBound(const Graph&, const Op&, size_t /*operand*/) const { return -1; }
};

inline const OpFamilyRules& rulesOf(const OpDef& def) { return *def.rules; }
inline const OpFamilyRules& rulesOf(const Op& op) { return rulesOf(defOf(op)); }
// The sample call of an op (--list-ops).
OpSample sampleOf(const OpDef& def);

}  // namespace irc
