#pragma once
// Runs the whole pipeline in-process, for tests that look at what it produced or verify it.
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "passes/spmd_simulator.h"

namespace irc::test {

struct Compiled {
  Graph original;
  Graph global;
  std::map<int64_t, Graph> locals;  // every rank
  std::string errors;               // diagnostics if the model or a pass rejected it
};

// `tamper` may change the global graph between redistribution and shape slicing.
Compiled compileAllRanks(const std::string& yaml, std::optional<SearchMode> mode = std::nullopt,
                         const std::function<void(Graph&)>& tamper = nullptr,
                         std::optional<RedistributionMode> planner = std::nullopt);
VerifyResult verifyCompiled(const Compiled& c, uint64_t seed = 0);

}  // namespace irc::test
