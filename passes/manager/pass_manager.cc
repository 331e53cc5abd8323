#include "passes/manager/pass_manager.h"

#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/verifier.h"

namespace irc {

void PassManager::addPass(int position, std::unique_ptr<Pass> pass) { passes_.push_back({position, std::move(pass)}); }

void PassManager::addRankPass(int position, RankPassFactory factory) { rankPasses_.emplace_back(position, std::move(factory)); }

void PassManager::addInstrumentation(PassInstrumentation* instrumentation) { instrumentations_.push_back(instrumentation); }

bool PassManager::runOne(int position, Pass& pass, const std::function<Graph&()>& graphToRun, PassContext& context,
                         int64_t rank) {
  PassStage stage = PassStage::of(position, pass);
  for (auto* i : instrumentations_) i->beforePass(stage);
  Graph& graph = graphToRun();
  PassStatus status = pass.run(graph, context);
  if (status == PassStatus::Failed) {
    if (!context.diags.hasErrors()) throw InternalError(fmt::format("pass '{}' failed without a diagnostic", pass.name()));
    for (auto* i : instrumentations_) i->passFailed(stage, graph, rank);
    return false;
  }
  // A rank pass makes a new graph, so it is always verified; a global pass only when it changed
  // the graph's structure.
  if (status == PassStatus::Changed || rank != kGlobalGraph) {
    auto problems = verifyGraph(graph);
    if (!problems.empty())
      throw InternalError(fmt::format("{} invalid after pass '{}':\n  {}",
                                      rank == kGlobalGraph ? std::string("the graph is") : fmt::format("rank {}'s graph is", rank),
                                      pass.name(), fmt::join(problems, "\n  ")));
  }
  for (auto* i : instrumentations_) {
    if (rank == kGlobalGraph) i->afterPass(stage, graph);
    else i->afterRankPass(stage, graph, rank);
  }
  return true;
}

RunOutcome PassManager::run(Graph& graph, PassContext& context) {
  for (auto* i : instrumentations_) i->afterPass(PassStage::loaded(), graph);
  for (ScheduledPass& scheduled : passes_)
    if (!runOne(scheduled.position, *scheduled.pass, [&]() -> Graph& { return graph; }, context, kGlobalGraph))
      return RunOutcome::Rejected;
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
      if (!runOne(position, *pass, rankGraph, context, rank)) return RunOutcome::Rejected;
    }
    if (rankSink_ && copy) rankSink_(rank, std::move(*copy));
  }
  return RunOutcome::Ok;
}

}  // namespace irc
