// Needs: a loaded graph. Guarantees: every op with a rule has a sharding and an origin;
// configured ops keep theirs. Fails (with diagnostics) on an invalid configured strategy.
#include "passes/strategy_propagation.h"

#include <algorithm>

#include "ops/op_defs.h"
#include "passes/propagation/propagation_mode.h"

namespace irc {
namespace {

class StrategyPropagationPass : public Pass {
 public:
  explicit StrategyPropagationPass(const CompileOptions& options)
      : options_(options), mode_(propagationModeFor(options.searchMode)) {}
  std::string_view name() const override { return mode_->passName(); }
  std::string_view dumpName() const override { return "step_parallel_begin"; }
  GraphFacts gives() const override { return {GraphFact::Strategies}; }

  PassStatus run(Graph& graph, PassContext& context) override {
    // A model without ops (inputs returned as they are) has nothing to shard.
    if (!hasModelOps(graph)) return PassStatus::Unchanged;
    PropagationInput in = preparePropagation(graph, context, options_, mode_->usesAllDevices() && options_.fullyUseDevices);
    if (in.failed) return PassStatus::Failed;
    return mode_->fill(graph, in, context, options_) ? PassStatus::Annotated : PassStatus::Failed;
  }

 private:
  CompileOptions options_;
  std::unique_ptr<PropagationMode> mode_;
};

}  // namespace

bool hasModelOps(const Graph& graph) {
  return std::any_of(graph.ops.begin(), graph.ops.end(), [](const Op& op) { return !op.inserted(); });
}

PassStatus propagateStrategies(Graph& graph, PassContext& context, const CompileOptions& options) {
  return StrategyPropagationPass(options).run(graph, context);
}

std::unique_ptr<Pass> createStrategyPropagationPass(const CompileOptions& options) {
  return std::make_unique<StrategyPropagationPass>(options);
}

}  // namespace irc
