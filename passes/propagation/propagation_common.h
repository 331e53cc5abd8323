#pragma once
// Pieces every propagation mode shares: rules of all ops computed once, the configured ops'
// shardings, the layout a tensor annotation stands for, and the finishing step that gives
// Reshapes and unreached ops their shardings.
#include <functional>
#include <optional>
#include <vector>

#include "ir/graph.h"
#include "passes/manager/compile_options.h"
#include "ops/int_key.h"
#include "ops/op_rule.h"
#include "ops/op_sharding.h"
#include "passes/manager/pass.h"
#include "passes/propagation/sharding_assignment.h"

namespace irc {

struct PropagationInput {
  std::vector<const OpRule*> rules;  // per op id: its op.parallel->rule, null for inserted ops
  std::vector<OpView> views;         // per op id
  bool failed = false;               // a configured strategy was invalid (diagnosed)
  CompileOptions options;
};

// Rules and views of all ops; configured ops get their sharding (origin user).
PropagationInput preparePropagation(Graph& graph, PassContext& context, const CompileOptions& options, bool fullyUseDevices);

// Memo keys (layers repeat: every layer's ops ask the same questions; a layout's:
// appendLayoutKey, ops/int_key.h). What an op's candidate shardings depend on: its definition,
// rule and shapes.
IntKey candidateKeyOf(const OpRule& rule, const OpView& view);

// The layout an input/parameter annotation or an op-output constraint stands for.
TensorLayout layoutOfSharding(const TensorSharding& sharding, const DeviceMatrix& mesh, const Shape& shape);

// The layout a value is produced in: an op result's final layout (after its forward ops), an
// annotated input's annotation; nullopt for an unannotated input or an op without a sharding.
std::optional<TensorLayout> producedLayout(const Graph& graph, const PropagationInput& in, ValueId value);

// In execution order: a Reshape without a sharding takes the one its input's layout implies
// through its factors (replicated when nothing is known); any other op without one gets
// `fallback` (origin default).
void finishPropagation(Graph& graph, const PropagationInput& in,
                       const std::function<OpSharding(OpId, const OpRule&, const OpView&)>& fallback);

// search_mode data_parallel: the batch, split from the graph inputs' dim 0, stays split through
// every op that keeps it (an op takes the layout of its first batch-carrying operand, as far as
// its rule lets it through), so nothing communicates unless an op reads across the batch; an op
// reading only trained weights (a weight's Transpose) is replicated, as DDP holds its weights;
// where no operand's layout says anything (a mask built from constants), dataParallelSharding's
// dim-0 split.
void runDataParallel(Graph& graph, const PropagationInput& in);

// A `modules:` plan as DTensor runs it (settings' modulesAsDTensor), after propagation: every op
// outside the styled modules that no strategy configures is reassigned, in execution order, to
// compute on what it reads — a module's local shard passes on through the ops after it (the
// attention math between q_proj and o_proj), a replicated value keeps them replicated (lm_head
// outside the plan, attention in an MLP-only plan, a model output) — never shaped by its
// consumers. Ops inside a styled module keep what propagation gave them.
void runForwardFill(Graph& graph, const PropagationInput& in);

// MindSpore's ReshapeInfo, for the MindSpore modes (spec §5 items 6 and 7): a Reshape with a
// consumer takes its output layout from its first consumer's need and its input layout from
// its producer, the redistribution done at the Reshape: before it (to the layout that reshapes
// locally into the consumer's, as far as the reshape's factors express it) and, for what they
// cannot express, right after it. Reshapes are visited consumers first. A Reshape whose result
// is only a graph output keeps the projection of its input (spec §5 item 7: KeepSplit) or, as
// MindSpore's ReshapeInfo leaves a layout no next op asked for, is replicated after it
// (Replicated: the modes that mirror MindSpore's strategy-driven compile, docs/deviations.md).
enum class ReshapeOutput { KeepSplit, Replicated };
void reshapeLayoutsFromConsumers(Graph& graph, const PropagationInput& in, ReshapeOutput unconsumed);

}  // namespace irc
