// Needs: a loaded graph. Guarantees: every op with a rule has a sharding and an origin;
// configured ops keep theirs. Fails (with diagnostics) on an invalid configured strategy.
#include "passes/strategy_propagation.h"

#include <algorithm>

#include "passes/search/auto_search.h"
#include "passes/propagation/propagation_common.h"
#include "passes/propagation/sharding_propagation.h"
#include "ops/op_defs.h"

namespace irc {
namespace {

class StrategyPropagationPass : public Pass {
 public:
  explicit StrategyPropagationPass(const CompileOptions& options) : options_(options), mode_(options.searchMode) {}
  std::string_view name() const override {
    return mode_ == SearchMode::FactorPropagation ? "factor_propagation" : "sharding_propagation";
  }
  std::string_view dumpName() const override { return "step_parallel_begin"; }

  PassStatus run(Graph& graph, PassContext& context) override {
    // A model without ops (inputs returned as they are) has nothing to shard.
    if (!hasModelOps(graph)) return PassStatus::Unchanged;
    return propagate(graph, context);
  }

 private:
  PassStatus propagate(Graph& graph, PassContext& context) const {
    bool fullyUse = (mode_ == SearchMode::ShardingPropagation || mode_ == SearchMode::Auto) && options_.fullyUseDevices;
    PropagationInput in = preparePropagation(graph, context, options_, fullyUse);
    if (in.failed) return PassStatus::Failed;
    int64_t devices = options_.deviceNum;
    switch (mode_) {
      case SearchMode::SemiAuto:
        finishPropagation(graph, in, [&](OpId, const OpRule& r, const OpView&) { return replicatedSharding(r, devices); });
        reshapeLayoutsFromConsumers(graph, in);
        break;
      case SearchMode::DataParallel:
        runDataParallel(graph, in);
        reshapeLayoutsFromConsumers(graph, in);
        break;
      case SearchMode::ShardingPropagation:
        runShardingPropagation(graph, in);
        reshapeLayoutsFromConsumers(graph, in);
        if (options_.modulesAsDTensor) runForwardFill(graph, in);
        break;
      case SearchMode::FactorPropagation:
        runFactorPropagation(graph, in);
        if (options_.modulesAsDTensor) runForwardFill(graph, in);
        break;
      case SearchMode::Auto:
        if (!runAutoSearch(graph, in, context)) return PassStatus::Failed;
        finishPropagation(graph, in, [&](OpId, const OpRule& r, const OpView&) { return replicatedSharding(r, devices); });
        break;
    }
    return PassStatus::Annotated;
  }

  CompileOptions options_;
  SearchMode mode_;
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
