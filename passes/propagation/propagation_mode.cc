#include "passes/propagation/propagation_mode.h"

#include "passes/propagation/sharding_assignment.h"
#include "passes/propagation/sharding_propagation.h"

namespace irc {
namespace {

// Every op the user did not configure is replicated.
void replicateTheRest(Graph& graph, const PropagationInput& in, int64_t devices) {
  finishPropagation(graph, in, [&](OpId, const OpRule& r, const OpView&) { return replicatedSharding(r, devices); });
}

// semi_auto: MindSpore's semi-auto parallel; only configured ops are split.
class SemiAutoMode : public PropagationMode {
 public:
  bool fill(Graph& graph, const PropagationInput& in, PassContext&, const CompileOptions& options) const override {
    replicateTheRest(graph, in, options.deviceNum);
    reshapeLayoutsFromConsumers(graph, in, ReshapeOutput::Replicated);
    return true;
  }
};

// data_parallel: every op split on its batch dim over all devices.
class DataParallelMode : public PropagationMode {
 public:
  bool fill(Graph& graph, const PropagationInput& in, PassContext&, const CompileOptions&) const override {
    runDataParallel(graph, in);
    reshapeLayoutsFromConsumers(graph, in, ReshapeOutput::KeepSplit);
    return true;
  }
};

// sharding_propagation: MindSpore's cost-based propagation from the configured ops.
class ShardingPropagationMode : public PropagationMode {
 public:
  bool usesAllDevices() const override { return true; }
  bool fill(Graph& graph, const PropagationInput& in, PassContext&, const CompileOptions& options) const override {
    runShardingPropagation(graph, in);
    // DTensor hands a module's output on as its style left it (a modules: plan keeps the split).
    reshapeLayoutsFromConsumers(graph, in, options.modulesAsDTensor ? ReshapeOutput::KeepSplit : ReshapeOutput::Replicated);
    if (options.modulesAsDTensor) runForwardFill(graph, in);
    return true;
  }
};

// factor_propagation: Shardy's factor propagation with priorities.
class FactorPropagationMode : public PropagationMode {
 public:
  std::string_view passName() const override { return "factor_propagation"; }
  bool fill(Graph& graph, const PropagationInput& in, PassContext&, const CompileOptions& options) const override {
    runFactorPropagation(graph, in);
    if (options.modulesAsDTensor) runForwardFill(graph, in);
    return true;
  }
};

// auto: the operator-level search (the ILP, search/auto_search.h) picked every op's strategy
// before this compile began; its plan is applied here, where the search's choice takes effect
// in the pipeline, with what it said.
class AutoSearchMode : public PropagationMode {
 public:
  bool usesAllDevices() const override { return true; }
  bool fill(Graph& graph, const PropagationInput& in, PassContext& context, const CompileOptions& options) const override {
    if (!options.operatorPlan)
      throw InternalError(
          "search_mode auto compiles the operator-level search's plan (search/operator_search.h compileWithSearch); "
          "this compile was given none");
    const OperatorPlan& plan = *options.operatorPlan;
    for (const Diagnostic& d : plan.diagnostics) context.diags.report(d);
    if (!plan.found) return false;
    for (const OperatorPlan::Choice& c : plan.choices) assignSharding(graph.op(c.op), c.sharding, c.origin);
    graph.search = plan.summary;
    replicateTheRest(graph, in, options.deviceNum);
    return true;
  }
};

}  // namespace

std::unique_ptr<PropagationMode> propagationModeFor(SearchMode mode) {
  switch (mode) {
    case SearchMode::SemiAuto: return std::make_unique<SemiAutoMode>();
    case SearchMode::DataParallel: return std::make_unique<DataParallelMode>();
    case SearchMode::ShardingPropagation: return std::make_unique<ShardingPropagationMode>();
    case SearchMode::FactorPropagation: return std::make_unique<FactorPropagationMode>();
    case SearchMode::Auto: return std::make_unique<AutoSearchMode>();
  }
  return std::make_unique<ShardingPropagationMode>();
}

}  // namespace irc
