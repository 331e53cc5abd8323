#include "ops/batch_split.h"

#include <fmt/format.h>

#include "ops/shape_inference.h"

namespace irc {

int64_t inputBatchOf(const Graph& graph) {
  int64_t batch = 0;
  for (ValueId v : graph.inputs) {
    const Shape& shape = graph.value(v).type.shape;
    if (shape.empty()) continue;
    if (batch != 0 && shape[0] != batch) return 0;
    batch = shape[0];
  }
  return batch;
}

std::optional<std::string> splitBatch(Graph& graph, int64_t batch) {
  const int64_t step = inputBatchOf(graph);
  if (step == 0) return std::string("the inputs share no leading (batch) dimension");
  if (batch < 1 || step % batch != 0) return fmt::format("{} samples do not divide the inputs' batch of {}", batch, step);
  if (batch == step) return std::nullopt;
  for (ValueId v : graph.inputs) {
    Shape& shape = graph.value(v).type.shape;
    if (!shape.empty()) shape[0] = batch;
  }
  for (OpId id : graph.order) {
    Op& op = graph.op(id);
    // A constant equal to a result's shape is the shape the op writes out: its leading dimension
    // holds the batch when the step's batch divides it ([B, S, H], or [B * S, H] flattened).
    for (Operand& o : op.operands) {
      if (o.isValue() || !o.constant) continue;
      auto* tuple = std::get_if<IntTuple>(&*o.constant);
      if (!tuple || tuple->empty() || (*tuple)[0] % step != 0) continue;
      for (ValueId r : op.results)
        if (graph.value(r).type.shape == *tuple) {
          (*tuple)[0] = (*tuple)[0] / step * batch;
          break;
        }
    }
    std::vector<const TensorType*> types;
    for (const Operand& o : op.operands) types.push_back(o.isValue() ? &graph.value(o.value).type : nullptr);
    InferResult r = inferOnOperandTypes(op, types);
    if (auto* e = std::get_if<InferError>(&r))
      return fmt::format("op '{}' does not follow the batch of {} samples: {}", op.name, batch, e->message);
    auto results = std::get<std::vector<TensorType>>(std::move(r));
    for (size_t i = 0; i < results.size() && i < op.results.size(); ++i) graph.value(op.results[i]).type = results[i];
  }
  return std::nullopt;
}

}  // namespace irc
