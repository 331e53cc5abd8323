#pragma once
// search_mode auto on a cluster, for a training graph of repeated layers (docs/search.md, "The
// structural search"): the plan users choose on 1,000-16,000 devices — the mesh's data, tensor
// and pipeline factors (any integers), the micro-batch size and count (the inputs hold the whole
// step's batch), recompute (none, selective: the attention's scores, full: each layer) and
// optimizer sharding — searched by structure, as Alpa and MindSpore's recursive programming do:
//   1. every factorisation is enumerated and those whose parameters cannot fit are dropped by a
//      memory lower bound before anything is compiled;
//   2. per (tensor-parallel size, micro-batch size, sequence parallel) one data-parallel
//      replica's micro-batch is compiled on `tp` devices (Megatron's column/row products,
//      search/tensor_parallel_seeds.h, completed by sharding propagation) and timed and sized by
//      the step model of a cluster: the layer model (search/layer_model.h); layers repeat, so
//      every layer of it is one row;
//   3. every configuration is estimated from its layer model (1F1B over the stages' layers,
//      the data-parallel gradient reduction over the links its group crosses, the optimizer);
//   4. the fastest few that fit are compiled whole, and the fastest that fits by the compile's
//      own estimate is the plan: the graph is split into its micro-batch and seeded, and the
//      options say its stages, micro-batches, recompute and optimizer sharding.
#include "ir/diagnostics.h"
#include "ir/graph.h"
#include "passes/manager/compile_options.h"
#include "search/operator_search.h"

namespace irc {

enum class ConfigurationSearchOutcome {
  NotApplicable,  // not search_mode auto with a cluster and training, or no repeated layers
  Applied,        // graph and options hold the chosen plan; graph.search its account
  Failed,         // nothing fits (a diagnostic says why)
};

// Its trial compiles run `compile` (compileForTrials(): search/operator_search.h).
ConfigurationSearchOutcome runConfigurationSearch(Graph& graph, CompileOptions& options, DiagnosticEngine& diags,
                                                  const TrialCompile& compile);

}  // namespace irc
