#pragma once
// What search_mode auto found and how (search/auto_search.cc writes it; the report's `search`
// section, explain and the stderr summary read it).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/sharding.h"
#include "plan/parallel_dims.h"

namespace irc {

struct SearchAlternative {
  ShardStrategy strategy;
  double deltaSeconds = 0;  // the step's estimated time with this strategy instead, the rest kept
};

// Ops that share the search's variables (the same op of every repeated layer) form a class.
struct SearchClass {
  std::vector<int32_t> ops;                  // OpIds, in model order
  int candidates = 0;                        // after removing duplicates
  double secondsEach = 0;                    // the chosen strategy's own time (compute, forward ops, gradient sync)
  std::vector<SearchAlternative> runnersUp;  // cheapest first, at most three
};

// One configuration of the structural search (search/configuration_search.h): the mesh
// factorisation, the micro-batching, recompute and optimizer sharding, and what it was estimated at.
struct SearchConfiguration {
  ParallelDims dims;             // etp: each expert's FFN split over the TP ranks (a model with experts: tp)
  std::string pipelineSchedule;  // with pipeline stages: 1f1b, zero_bubble, interleaved_1f1b or gpipe
  int64_t microBatchSize = 1, microBatches = 1;
  std::string recompute = "none";    // none, selective (attention), full (each layer)
  int optimizerLevel = 0;            // MindSpore's optimizer_level; 0 off
  int zeroStage = 0;                 // ZeRO-1/2 (parallel.zero_stage); 0 off
  std::vector<int64_t> stageLayers;  // layers per pipeline stage
  double stepSeconds = 0;            // estimated step
  double layerModelSeconds = 0;      // the layer model's step (before any compile), for comparing the two
  double tflopsPerDevice = 0;
  double peakBytes = 0;   // the fullest rank's training peak
  bool compiled = false;  // estimated by compiling the plan (else by the layer model)
  std::string verdict;    // chosen, or why it lost
};

// The structural search's answer: the chosen configuration and the best others.
struct ConfigurationSearch {
  SearchConfiguration chosen;
  std::vector<SearchConfiguration> alternatives;  // fastest first, at most five
  int64_t considered = 0;                         // configurations enumerated
  int64_t prunedByMemory = 0;                     // dropped by the memory lower bound before any compile
  int64_t probes = 0;                             // (tp, micro-batch size) layer models compiled
  int64_t compiledPlans = 0;                      // configurations compiled whole
  // search_time_limit stopped it (status time_limit): configurations left without an estimate,
  // and the best candidates by the layer model left uncompiled.
  int64_t unestimated = 0, uncompiled = 0;
  int64_t layers = 0;  // the repeated layers found
  // What the model gave that the search kept, in the model's words ("zero_stage 2").
  std::vector<std::string> given;
  // precision: auto: the recipe chosen, and each recipe tried with its plan's step (0 where
  // nothing fit), in the order tried.
  std::string precision;
  std::vector<std::pair<std::string, double>> precisions;
};

struct SearchSummary {
  std::string status;    // optimal, time_limit; the structural search: structural, or time_limit
  double objective = 0;  // estimated step seconds by the search's model
  double bound = 0;      // the solver's proven lower bound
  double gap = 0;
  double solverSeconds = 0;
  double timeLimit = 0;
  int columns = 0, rows = 0;
  int searchedOps = 0, fixedOps = 0;  // the search's own, and the configured ones it kept
  double memoryBudget = 0;            // 0: none
  double estimatedPeak = 0;           // irc's memory estimate of the plan (with a budget)
  int memoryRounds = 0;               // solves until the estimate met the budget
  std::vector<SearchClass> classes;
  std::vector<int32_t> classOf;  // per OpId: its class, -1 for ops not searched
  // search_mode auto with a cluster on a model of repeated layers: the structural search's account.
  std::optional<ConfigurationSearch> configuration;
};

}  // namespace irc
