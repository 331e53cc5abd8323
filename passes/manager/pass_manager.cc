#include "passes/manager/pass_manager.h"

#include <cstdint>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/verifier.h"

namespace irc {
namespace {

// The graph's structure: its ops in order with their types, operands and results (FNV-1a).
// Parallel state (strategies, layouts, stages) is not structure.
[[maybe_unused]] uint64_t structuralHash(const Graph& graph) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t x) {
    h ^= x;
    h *= 1099511628211ull;
  };
  mix(graph.ops.size());
  mix(graph.values.size());
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    mix(static_cast<uint64_t>(id));
    for (char c : op.type) mix(static_cast<unsigned char>(c));
    for (const Operand& o : op.operands) mix(o.isValue() ? static_cast<uint64_t>(o.value) : ~0ull);
    for (ValueId r : op.results) mix(static_cast<uint64_t>(r));
  }
  return h;
}

class FunctionPass : public Pass {
 public:
  FunctionPass(PassSpec spec, std::function<PassStatus(Graph&, PassContext&)> run) : spec_(spec), run_(std::move(run)) {}
  std::string_view name() const override { return spec_.name; }
  std::string_view dumpName() const override { return spec_.dumpName; }
  GraphFacts needs() const override { return spec_.needs; }
  GraphFacts gives() const override { return spec_.gives; }
  PassStatus run(Graph& graph, PassContext& context) override { return run_(graph, context); }

 private:
  PassSpec spec_;
  std::function<PassStatus(Graph&, PassContext&)> run_;
};

// What the graph already holds when the run starts: strategies and layouts on every op (a graph
// the operator-level search gave strategies to, compiled on from layout inference).
GraphFacts factsHeldBy(const Graph& graph) {
  bool strategies = !graph.order.empty(), layouts = !graph.order.empty();
  for (OpId id : graph.order) {
    const OpParallelState& p = *graph.op(id).parallel;
    strategies = strategies && p.hasSharding;
    layouts = layouts && p.layoutsInferred;
  }
  GraphFacts held;
  if (strategies) held = held.with({GraphFact::Strategies});
  if (layouts) held = held.with({GraphFact::Layouts});
  return held;
}

}  // namespace

std::string GraphFacts::text() const {
  std::vector<std::string> names;
  if (has(GraphFact::Strategies)) names.push_back("strategies (sharding_propagation gives them)");
  if (has(GraphFact::Layouts)) names.push_back("layouts (layout_inference)");
  if (has(GraphFact::Communication)) names.push_back("communication (redistribution)");
  return fmt::format("{}", fmt::join(names, ", "));
}

std::unique_ptr<Pass> makePass(PassSpec spec, std::function<PassStatus(Graph&, PassContext&)> run) {
  return std::make_unique<FunctionPass>(spec, std::move(run));
}

bool PassManager::satisfied(const Pass& pass, PassContext& context) const {
  GraphFacts missing = pass.needs().without(held_);
  if (missing.empty()) return true;
  context.diags.error(SourceLoc{}, fmt::format("pass '{}' needs the graph's {}, which no pass before it gave: run the pipeline "
                                               "from the start, or name those passes in --passes too",
                                               pass.name(), missing.text()));
  return false;
}

void PassManager::addPass(int position, std::unique_ptr<Pass> pass) { passes_.push_back({position, std::move(pass)}); }

void PassManager::addRankPass(int position, RankPassFactory factory) { rankPasses_.emplace_back(position, std::move(factory)); }

void PassManager::addInstrumentation(PassInstrumentation* instrumentation) { instrumentations_.push_back(instrumentation); }

bool PassManager::runStage(int position, const std::vector<Pass*>& passes, const std::function<Graph&()>& graphToRun,
                           PassContext& context, int64_t rank) {
  // The stage is named by its pass that writes the dump (the others are steps inside it).
  const Pass* named = passes.back();
  for (const Pass* p : passes)
    if (!p->dumpName().empty()) named = p;
  PassStage stage = PassStage::of(position, *named);
  for (auto* i : instrumentations_) i->beforePass(stage);
  Graph& graph = graphToRun();
  for (Pass* pass : passes) {
    if (!satisfied(*pass, context)) {
      for (auto* i : instrumentations_) i->passFailed(stage, graph, rank);
      return false;
    }
#ifdef IRC_SANITIZED
    const uint64_t before = structuralHash(graph);
#endif
    PassStatus status = pass->run(graph, context);
    if (status == PassStatus::Failed) {
      if (!context.diags.hasErrors()) throw InternalError(fmt::format("pass '{}' failed without a diagnostic", pass->name()));
      for (auto* i : instrumentations_) i->passFailed(stage, graph, rank);
      return false;
    }
#ifdef IRC_SANITIZED
    // The sanitizer builds hold each pass to its word: Unchanged or Annotated leaves the ops,
    // their order and their operands as they were.
    if ((status == PassStatus::Unchanged || status == PassStatus::Annotated) && structuralHash(graph) != before)
      throw InternalError(fmt::format("pass '{}' said {} but changed the graph's structure", pass->name(),
                                      status == PassStatus::Unchanged ? "Unchanged" : "Annotated"));
#endif
    if (rank == kGlobalGraph) held_ = held_.with(pass->gives());
    // A rank pass makes a new graph, so it is always verified; a global pass only when it
    // changed the graph's structure.
    if (status == PassStatus::Changed || rank != kGlobalGraph) {
      auto problems = verifyGraph(graph);
      if (!problems.empty())
        throw InternalError(
            fmt::format("{} invalid after pass '{}':\n  {}",
                        rank == kGlobalGraph ? std::string("the graph is") : fmt::format("rank {}'s graph is", rank),
                        pass->name(), fmt::join(problems, "\n  ")));
    }
  }
  for (auto* i : instrumentations_) {
    if (rank == kGlobalGraph) i->afterPass(stage, graph);
    else i->afterRankPass(stage, graph, rank);
  }
  return true;
}

RunOutcome PassManager::run(Graph& graph, PassContext& context) {
  held_ = factsHeldBy(graph);
  for (auto* i : instrumentations_) i->afterPass(PassStage::loaded(), graph);
  // Consecutive passes of one position are one pipeline stage: one dump, one timing, after the last.
  for (size_t first = 0; first < passes_.size();) {
    std::vector<Pass*> stage;
    size_t end = first;
    for (; end < passes_.size() && passes_[end].position == passes_[first].position; ++end)
      stage.push_back(passes_[end].pass.get());
    if (!runStage(
            passes_[first].position, stage, [&]() -> Graph& { return graph; }, context, kGlobalGraph))
      return RunOutcome::Rejected;
    first = end;
  }
  if (globalHook_) globalHook_(graph);
  if (rankPasses_.empty()) return RunOutcome::Ok;
  for (int64_t rank : ranks_) {
    std::optional<Graph> copy;
    for (auto& [position, factory] : rankPasses_) {
      std::unique_ptr<Pass> pass = factory(rank);
      // The rank's own graph: its making is part of the first rank pass (timed with it).
      auto rankGraph = [&]() -> Graph& {
        if (!copy && !keepGlobal_ && ranks_.size() == 1) copy.emplace(std::move(graph));
        else if (!copy) copy.emplace(graph);
        return *copy;
      };
      if (!runStage(position, {pass.get()}, rankGraph, context, rank)) return RunOutcome::Rejected;
    }
    if (rankSink_ && copy) rankSink_(rank, std::move(*copy));
  }
  return RunOutcome::Ok;
}

}  // namespace irc
