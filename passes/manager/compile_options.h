#pragma once
// What a compile runs with. Passes read their settings from here, never from the graph: the
// model's `parallel` block reaches them through optionsFromModel(), and the command line's
// overrides are applied to the options, not written into the model.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/device_matrix.h"
#include "plan/parallel_config.h"
#include "plan/operator_plan.h"

namespace irc {

// The parallel settings in effect (the model's, then the command line's overrides), and what to
// run.
struct CompileOptions : ParallelSettings {
  // What to run: every stage, only the passes named in `passes`, or up to `stopAfter`.
  std::vector<std::string> passes;
  std::string stopAfter;
  // The ranks whose local graphs shape slicing makes (empty: the global rank).
  std::vector<int64_t> ranks;
  // Where the model's `parallel` block is, for errors about the settings (none for an ONNX graph).
  SourceLoc settingsLoc;
  // search_mode auto's operator-level choice, which strategy propagation applies: made by the
  // search above the pipeline (search/operator_search.h compileWithSearch), never inside it.
  std::shared_ptr<const OperatorPlan> operatorPlan;
  // The structural search compiles every configuration that fits, not its layer model's best
  // few: the tests' brute-force oracle for its choice (no command-line spelling).
  bool searchCompilesEverything = false;
  // The operator-level search's time limit, made deterministic for tests: it falls after this
  // many solver solutions in all (0: before the first solve; CBC is told to stop at its n-th
  // solution instead of at a wall-clock second). Unset: search_time_limit's wall clock.
  std::optional<int> searchLimitAtSolution;

  std::vector<int64_t> ranksToMaterialize() const { return ranks.empty() ? std::vector<int64_t>{globalRank} : ranks; }
  std::vector<int64_t> everyRank() const;
};

// The options a model's own `parallel` block asks for.
CompileOptions optionsFromModel(const ParallelConfig& model);

}  // namespace irc
