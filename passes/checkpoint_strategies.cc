#include "passes/checkpoint_strategies.h"

#include <algorithm>

#include "ops/op_defs.h"
#include "passes/strategy_propagation.h"
#include "ops/op_sharding.h"

namespace irc {
namespace {

// The checkpoint's strategy becomes the op's configured one.
void pinCheckpointStrategy(Op& op) {
  op.annotation->inStrategy = *std::as_const(op).annotation->checkpointStrategy;
  op.annotation->inLayout.reset();
  op.annotation->inStrategyLoc = op.loc;
}

class CheckpointStrategyPass : public Pass {
 public:
  explicit CheckpointStrategyPass(const CompileOptions& options) : options_(options) {}
  std::string_view name() const override { return "checkpoint_strategies"; }
  std::string_view dumpName() const override { return ""; }  // a step of strategy propagation's stage

  PassStatus run(Graph& graph, PassContext& context) override {
    bool any = std::any_of(graph.ops.begin(), graph.ops.end(),
                           [](const Op& op) { return op.annotation->checkpointStrategy.has_value(); });
    if (!any || !hasModelOps(graph)) return PassStatus::Unchanged;
    // search_mode auto keeps every configured strategy and searches the rest: the checkpoint's
    // strategies are all configured (a dry run would be a second search, over other constraints).
    if (options_.searchMode == SearchMode::Auto) {
      for (Op& op : graph.ops)
        if (std::as_const(op).annotation->checkpointStrategy) pinCheckpointStrategy(op);
      return PassStatus::Annotated;
    }
    Graph dry = graph;
    for (Op& op : dry.ops)
      if (op.annotation.written()) op.annotation->checkpointStrategy.reset();
    if (propagateStrategies(dry, context, options_) == PassStatus::Failed) return PassStatus::Failed;
    for (size_t i = 0; i < graph.ops.size(); ++i) {
      Op& op = graph.ops[i];
      if (!std::as_const(op).annotation->checkpointStrategy) continue;
      const Op& got = dry.ops[i];
      if (got.parallel->hasSharding && strategyOf(got) == *op.annotation->checkpointStrategy && !takesLayoutsFromNeighbours(op))
        continue;
      pinCheckpointStrategy(op);
    }
    return PassStatus::Annotated;
  }

 private:
  CompileOptions options_;
};

}  // namespace

std::unique_ptr<Pass> createCheckpointStrategyPass(const CompileOptions& options) {
  return std::make_unique<CheckpointStrategyPass>(options);
}

}  // namespace irc
