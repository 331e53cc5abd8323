#include "passes/pass_manager.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/verifier.h"

namespace irc {

void PassManager::addPass(int position, std::unique_ptr<Pass> pass) { passes_.push_back({position, std::move(pass)}); }

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
  return RunOutcome::Ok;
}

}  // namespace irc
