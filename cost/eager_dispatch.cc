#include "cost/eager_dispatch.h"

#include <algorithm>

#include "ops/inserted_ops.h"
#include "cost/step_cost.h"

namespace irc {

EagerDispatchCounter::EagerDispatchCounter(const Graph& graph, const ParallelSettings& settings)
    : graph_(graph), settings_(settings), needsGradient_(graph.values.size(), false) {
  if (!settings.training) return;
  for (ValueId p : graph.parameters) {
    const Value& v = graph.value(p);
    needsGradient_[p] = v.trainable && isFloat(v.type.dtype);
  }
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    bool any = std::any_of(op.operands.begin(), op.operands.end(),
                           [&](const Operand& o) { return o.isValue() && needsGradient_[o.value]; });
    if (!any) continue;
    for (ValueId r : op.results) needsGradient_[r] = isFloat(graph.value(r).type.dtype);
  }
}

OpDispatches EagerDispatchCounter::next(const Op& op) {
  OpDispatches d;
  d.forward = 1;
  const bool product = op.parallel->rule && isProduct(*op.parallel->rule);
  const bool autocast = settings_.precision != Precision::Fp32 && product;
  int64_t resultElements = op.results.empty() ? 0 : numElements(graph_.value(op.results[0]).type.shape);
  int tensorOperands = 0;
  for (const Operand& o : op.operands) tensorOperands += o.isValue() ? 1 : 0;
  for (const Operand& o : op.operands) {
    if (!o.isValue()) continue;
    const Value& v = graph_.value(o.value);
    const bool cast = autocast && v.type.dtype == DType::Float32;
    d.forward += cast ? 1 : 0;
    if (needsGradient_[o.value]) {
      // Autograd's derivative formulas: the operand's gradient (one op); a product's takes the
      // other operand transposed (G·Bᵀ: a view); a broadcast operand sums the gradient back to
      // its shape; a cast's gradient is cast back; a value read again accumulates (an add).
      d.backward += 1 + (product ? 1 : 0) + (cast ? 1 : 0);
      if (!product && tensorOperands > 1 && numElements(v.type.shape) < resultElements) d.backward += 1;
      if (!read_.insert(o.value).second) d.backward += 1;
    }
    ValueId model = modelValueBehind(graph_, o.value);
    if (settings_.training && needsGradient_[model] && graph_.value(model).kind == ValueKind::Parameter &&
        counted_.insert({model, op.modulePath}).second)
      ++d.parameters;
  }
  return d;
}

int optimizerDispatches(const ParallelSettings& settings, int64_t parameters) {
  int perParameter = 0;
  switch (settings.optimizer) {
    case Optimizer::AdamW:
    case Optimizer::Adam: perParameter = 11; break;
    case Optimizer::Sgd: perParameter = 1; break;
    case Optimizer::Momentum: perParameter = 3; break;
  }
  switch (settings.optimizerKernels) {
    case OptimizerKernels::ForLoop: return static_cast<int>(perParameter * parameters);
    case OptimizerKernels::Foreach: return perParameter;  // one foreach op for all the tensors
    case OptimizerKernels::Fused: return 1;
  }
  return 0;
}

void EagerStream::issue(double hostSeconds, double deviceSeconds) {
  host_ += hostSeconds;
  device_ = std::max(device_, host_) + deviceSeconds;
}

double EagerStream::finish() const { return std::max(host_, device_); }

}  // namespace irc
