#include "passes/pass_manager.h"

#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/verifier.h"

namespace irc {

void PassManager::addPass(int position, std::unique_ptr<Pass> pass) { passes_.push_back({position, std::move(pass)}); }

void PassManager::addRankPass(int position, RankPassFactory factory) { rankPasses_.emplace_back(position, std::move(factory)); }

void PassManager::addInstrumentation(PassInstrumentation* instrumentation) { instrumentations_.push_back(instrumentation); }

RunOutcome PassManager::run(Graph& graph, PassContext& context) {
  for (auto* i : instrumentations_) i->afterPass(0, "parse", "parse", graph);
  for (ScheduledPass& scheduled : passes_) {
    Pass& pass = *scheduled.pass;
    for (auto* i : instrumentations_) i->beforePass(scheduled.position, pass.name());
    PassStatus status = pass.run(graph, context);
    if (status == PassStatus::Failed) {
      if (!context.diags.hasErrors())
        throw InternalError(fmt::format("pass '{}' failed without a diagnostic", pass.name()));
      return RunOutcome::Rejected;
    }
    if (status == PassStatus::Changed) {
      auto problems = verifyGraph(graph);
      if (!problems.empty())
        throw InternalError(fmt::format("the graph is invalid after pass '{}':\n  {}", pass.name(), fmt::join(problems, "\n  ")));
    }
    for (auto* i : instrumentations_) i->afterPass(scheduled.position, pass.name(), pass.dumpName(), graph);
  }
  if (globalHook_) globalHook_(graph);
  if (rankPasses_.empty()) return RunOutcome::Ok;
  for (int64_t rank : ranks_) {
    std::optional<Graph> copy;
    for (auto& [position, factory] : rankPasses_) {
      std::unique_ptr<Pass> pass = factory(rank);
      for (auto* i : instrumentations_) i->beforePass(position, pass->name());
      // The rank's own graph (its making is part of the first rank pass).
      if (!copy && !keepGlobal_ && ranks_.size() == 1) copy.emplace(std::move(graph));
      else if (!copy) copy.emplace(graph);
      Graph& local = *copy;
      PassStatus status = pass->run(local, context);
      if (status == PassStatus::Failed) {
        if (!context.diags.hasErrors())
          throw InternalError(fmt::format("pass '{}' failed without a diagnostic", pass->name()));
        return RunOutcome::Rejected;
      }
      auto problems = verifyGraph(local);
      if (!problems.empty())
        throw InternalError(fmt::format("rank {}'s graph is invalid after pass '{}':\n  {}", rank, pass->name(),
                                        fmt::join(problems, "\n  ")));
      for (auto* i : instrumentations_) i->afterRankPass(position, pass->name(), pass->dumpName(), local, rank);
    }
    if (rankSink_ && copy) rankSink_(rank, std::move(*copy));
  }
  return RunOutcome::Ok;
}

}  // namespace irc
