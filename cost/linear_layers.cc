#include "cost/linear_layers.h"

#include <algorithm>

#include "ops/collective.h"
#include "ops/inserted_ops.h"
#include "cost/step_cost.h"

namespace irc {
namespace {

bool isModelProduct(const Op& op) {
  return !op.inserted() && op.parallel->rule && isProduct(*op.parallel->rule) && op.operands.size() == 2;
}

// The operand holding a trained floating weight (behind the inserted ops that move it).
int weightOperand(const Graph& g, const Op& op) {
  for (size_t i = 0; i < op.operands.size(); ++i) {
    if (!op.operands[i].isValue()) continue;
    const Value& v = g.value(modelValueBehind(g, op.operands[i].value));
    if (v.kind == ValueKind::Parameter && v.trainable && isFloat(v.type.dtype)) return static_cast<int>(i);
  }
  return -1;
}

bool tensorCoreShaped(const Value& weight) {
  Shape local = weight.layout ? weight.layout->sliceShape() : weight.type.shape;
  if (local.size() < 2) return false;
  return local[local.size() - 1] % 16 == 0 && local[local.size() - 2] % 16 == 0;
}

}  // namespace

std::vector<int> linearLayerWeightOperands(const Graph& g) {
  const size_t n = g.values.size();
  std::vector<std::vector<OpId>> readers(n);
  for (OpId id : g.order)
    for (const Operand& o : g.op(id).operands)
      if (o.isValue()) readers[o.value].push_back(id);
  // Per value, walking forward through ops that are no product: whether it reaches a graph
  // output (the output layer's result) or an op choosing by value (a router's scores).
  std::vector<bool> toOutput(n, false), toChoice(n, false);
  // A pipeline stage's view returns what it sends to the next stage (plan/stage_view.h): that is
  // no output layer's result, the products before it are linear layers as on the whole graph.
  for (ValueId v : g.outputs) {
    OpId producer = g.value(v).producer;
    const Op* sender = producer == kNoId ? nullptr : &g.op(producer);
    if (!(sender && sender->step && isSend(*sender->step))) toOutput[v] = true;
  }
  for (auto it = g.order.rbegin(); it != g.order.rend(); ++it) {
    const Op& op = g.op(*it);
    if (isModelProduct(op)) continue;
    bool out = false, choice = false;
    for (ValueId r : op.results) {
      out = out || toOutput[r];
      choice = choice || toChoice[r] || isInteger(g.value(r).type.dtype);
    }
    for (const Operand& o : op.operands)
      if (o.isValue() && isFloat(g.value(o.value).type.dtype)) {
        toOutput[o.value] = toOutput[o.value] || out;
        toChoice[o.value] = toChoice[o.value] || choice;
      }
  }
  std::vector<int> weight(g.ops.size(), -1);
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    if (!isModelProduct(op)) continue;
    int w = weightOperand(g, op);
    if (w < 0 || !tensorCoreShaped(g.value(modelValueBehind(g, op.operands[w].value)))) continue;
    bool kept = std::any_of(op.results.begin(), op.results.end(), [&](ValueId r) { return toOutput[r] || toChoice[r]; });
    if (!kept) weight[id] = w;
  }
  return weight;
}

}  // namespace irc
