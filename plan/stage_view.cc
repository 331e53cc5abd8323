#include "plan/stage_view.h"

#include <algorithm>
#include <vector>

#include "ops/collective.h"

namespace irc {

// A pipelined rank runs its stage's ops: they alone stay in its order, with the inputs and
// parameters they read; a Receive gets its data from the other stage, not from its Send; the
// stage returns what leaves it (its Sends) unless it computes graph outputs.
void keepPipelineStage(Graph& graph, int32_t stage) {
  graph.stage = stage;
  std::vector<OpId> kept;
  std::vector<bool> read(graph.values.size(), false);
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    if (op.stage != stage) continue;
    // A stage's Receive reads no value of this stage: its Send's result is another stage's.
    if (op.step && isReceive(*op.step)) op.operands.clear();
    for (const Operand& o : op.operands)
      if (o.isValue()) read[o.value] = true;
    kept.push_back(id);
  }
  graph.order = std::move(kept);
  std::vector<bool> produced(graph.values.size(), false);
  std::vector<ValueId> sends;
  for (OpId id : graph.order) {
    for (ValueId r : graph.op(id).results) produced[r] = true;
    if (graph.op(id).step && isSend(*graph.op(id).step)) sends.push_back(graph.op(id).results[0]);
  }
  for (auto* list : {&graph.inputs, &graph.parameters})
    list->erase(std::remove_if(list->begin(), list->end(), [&](ValueId v) { return !read[v]; }), list->end());
  std::vector<ValueId> outputs;
  for (ValueId v : graph.outputs)
    if (produced[v] || (graph.value(v).producer == kNoId && read[v])) outputs.push_back(v);
  graph.outputs = outputs.empty() ? sends : outputs;
}

}  // namespace irc
