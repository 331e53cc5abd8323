#pragma once
// Eager PyTorch's host (`cluster.dispatch: eager`, docs/cluster.md): Python issues every op one
// by one, each costing the host `hostOpSeconds` whatever its size, and the device runs a kernel
// only once the host has issued it. Small models are bound by the host: a step takes the
// longer of the two, op by op, not the device's time alone.
//
// What the host issues, counted from what PyTorch runs:
// - forward: one op per graph op (views too: they pass through the same binding and
//   dispatcher); under torch.autocast each matrix product also casts each of its float32
//   operands to 16 bits (the autocast lower-precision list);
// - backward: the autograd engine runs, per operand that takes a gradient (a parameter that
//   trains, or a value computed from one), the op computing it; a product's also transposes the
//   other operand, a broadcast operand's sums it back to its shape, a cast's casts it back, and
//   a value read by several ops adds each further gradient to the first;
// - the optimizer: torch.optim's per-parameter loop (`foreach=False`) issues the ops of
//   `_single_tensor_adam` for every parameter (step += 1, the weight decay's mul_, lerp_, mul_,
//   addcmul_ with conj, item, sqrt, div, add_, addcdiv_: 11), SGD's add_ (1) or momentum's
//   mul_, add_, add_ (3); the foreach and fused kernels issue one set a step.
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "plan/parallel_config.h"

namespace irc {

struct OpDispatches {
  int forward = 0;
  int backward = 0;    // in training
  int parameters = 0;  // trainable parameters this op is the first to read (the optimizer's loop)
};

class EagerDispatchCounter {
 public:
  EagerDispatchCounter(const Graph& graph, const ParallelSettings& settings);
  // Call once per model op, in execution order.
  OpDispatches next(const Op& op);

 private:
  const Graph& graph_;
  const ParallelSettings& settings_;
  std::vector<bool> needsGradient_;  // by value: a trainable parameter or computed from one
  // The parameters counted, each with the module reading it: torch's optimizer visits every
  // module's parameter, and an exporter folds equal initializers into one (every LayerNorm's
  // ones in a model with fresh weights), which the modules tell apart again.
  std::set<std::pair<ValueId, int>> counted_;
  std::set<ValueId> read_;  // values an earlier op read
};

// The optimizer's host ops for `parameters` parameter tensors in one step.
int optimizerDispatches(const ParallelSettings& settings, int64_t parameters);

// The host issuing kernels to the device in order: each op's host seconds, then its kernel once
// both the host has issued it and the kernel before it is done.
class EagerStream {
 public:
  void issue(double hostSeconds, double deviceSeconds);
  double finish() const;  // when both are done

 private:
  double host_ = 0, device_ = 0;
};

}  // namespace irc
