#pragma once
// search_mode auto's operator-level choice as data (search/operator_search.h makes it, strategy
// propagation applies it): each searched op's sharding with the origin that says why, the
// search's account, and what the search said. The compile that applies it runs no search.
#include <memory>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/graph.h"
#include "ir/op_parallel.h"
#include "plan/search_summary.h"

namespace irc {

struct OperatorPlan {
  // False: the search found no plan (its diagnostics say why); strategy propagation then fails.
  bool found = false;
  struct Choice {
    OpId op;
    OpSharding sharding;
    StrategyOrigin origin;
  };
  std::vector<Choice> choices;  // the ops the search chose for (configured ops keep theirs)
  std::shared_ptr<const SearchSummary> summary;
  // The search's diagnostics, reported where strategy propagation applies the plan (in the
  // compile's order: after the strategy checkpoint's and the configured strategies' own).
  std::vector<Diagnostic> diagnostics;
};

}  // namespace irc
