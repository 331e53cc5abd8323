#pragma once
// The search modes of a model (spec/model-format.md), one interface: how strategy propagation
// fills the ops the user did not configure. StrategyPropagationPass prepares the input (the
// configured ops, the layouts pinned by annotations) once and hands it to the model's mode.
#include <memory>
#include <string_view>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"
#include "passes/propagation/propagation_common.h"

namespace irc {

class PropagationMode {
 public:
  virtual ~PropagationMode() = default;
  // The pass's name while this mode runs (timings, --stop-after, dumps' headers).
  virtual std::string_view passName() const { return "sharding_propagation"; }
  // Whether `fully_use_devices` widens a configured strategy to every device under this mode
  // (MindSpore's cost-based modes).
  virtual bool usesAllDevices() const { return false; }
  // Gives every unconfigured op a sharding; false when it failed (its diagnostics written).
  virtual bool fill(Graph& graph, const PropagationInput& in, PassContext& context, const CompileOptions& options) const = 0;
};

// The mode a compile's settings ask for.
std::unique_ptr<PropagationMode> propagationModeFor(SearchMode mode);

}  // namespace irc
