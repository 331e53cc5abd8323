#pragma once
// search_mode auto's operator-level search, above the pipeline: it finds where strategy
// propagation would begin (the strategy checkpoint's strategies and the configured ones given),
// runs the ILP there (search/auto_search.h) and hands compile() its choice as data
// (plan/operator_plan.h). compileWithSearch is how every command, the benchmark and the tests
// compile a model that may ask for the search.
#include <functional>
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/pipeline/compile.h"

namespace irc {

// The operator-level choice for `graph` under `options`; null where the compile does not reach
// strategy propagation or has no model ops, or where it fails before it (a strategy checkpoint,
// a configured strategy: the compile reports those where they arise).
std::shared_ptr<const OperatorPlan> searchOperatorPlan(const Graph& graph, const CompileOptions& options);

// compile() with search_mode auto's operator-level choice made first where the options ask for
// it and do not hold one.
RunOutcome compileWithSearch(Graph& graph, const CompileOptions& options, PassContext& context, const CompileHooks& hooks = {});

// How the structural search compiles a candidate plan: compileWithSearch, or its caller's
// wrapper of it (the command line counts them for its progress line).
using TrialCompile = std::function<RunOutcome(Graph&, const CompileOptions&, PassContext&)>;
TrialCompile compileForTrials();

}  // namespace irc
