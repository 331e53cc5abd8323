#pragma once
// What search_mode auto found and how (passes/auto_search.cc writes it; the report's `search`
// section, explain and the stderr summary read it).
#include <cstdint>
#include <string>
#include <vector>

#include "ir/sharding.h"

namespace irc {

struct SearchAlternative {
  ShardStrategy strategy;
  double deltaSeconds = 0;  // the step's estimated time with this strategy instead, the rest kept
};

// Ops that share the search's variables (the same op of every repeated layer) form a class.
struct SearchClass {
  std::vector<int32_t> ops;   // OpIds, in model order
  int candidates = 0;         // after removing duplicates
  double secondsEach = 0;     // the chosen strategy's own time (compute, forward ops, gradient sync)
  std::vector<SearchAlternative> runnersUp;  // cheapest first, at most three
};

struct SearchSummary {
  std::string status;      // optimal, time_limit
  double objective = 0;    // estimated step seconds by the search's model
  double bound = 0;        // the solver's proven lower bound
  double gap = 0;
  double solverSeconds = 0;
  double timeLimit = 0;
  int columns = 0, rows = 0;
  int searchedOps = 0, fixedOps = 0;  // the search's own, and the configured ones it kept
  double memoryBudget = 0;            // 0: none
  double estimatedPeak = 0;           // irc's memory estimate of the plan (with a budget)
  int memoryRounds = 0;               // solves until the estimate met the budget
  std::vector<SearchClass> classes;
  std::vector<int32_t> classOf;       // per OpId: its class, -1 for ops not searched
};

}  // namespace irc
