#pragma once
// The one way to run irc's pipeline on a chosen plan: the searches (search/), and through them
// compile, verify, explain, diff, the benchmark and the tests, call compile() on a loaded model.
#include <functional>
#include <vector>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass_manager.h"

namespace irc {

struct CompileHooks {
  std::vector<PassInstrumentation*> instrumentations;  // dumps, timing, progress
  // Receives each materialized rank's final local graph (verify, explain); else they are dropped.
  std::function<void(int64_t rank, Graph&&)> rankGraphs;
  // Called with the global graph after the global passes, before shape slicing (the report).
  std::function<void(const Graph&)> globalGraph;
  // False: the caller reads nothing of `graph` after compile(): one rank's graph may then be
  // made from it by moving instead of copying.
  bool keepGlobalGraph = true;
};

// Runs the pipeline `options` selects on `graph` (the global passes in place, then shape slicing
// once per rank to materialize). Rejections are diagnostics in `context`. search_mode auto's
// operator-level choice must be in the options (search/operator_search.h compileWithSearch
// searches, then calls this): the pipeline runs no search.
RunOutcome compile(Graph& graph, const CompileOptions& options, PassContext& context, const CompileHooks& hooks = {});

}  // namespace irc
