#include "passes/pipeline_transfers.h"

#include "passes/analysis/pipeline_split.h"

namespace irc {

std::unique_ptr<Pass> createPipelineTransferPass(const CompileOptions& options) {
  // A step of redistribution's stage: Send/Receive where a value crosses stages.
  return makePass({"pipeline_transfers", "", {GraphFact::Layouts}, {GraphFact::Communication}},
                  [options](Graph& graph, PassContext&) {
                    if (options.pipelineStages <= 1) return PassStatus::Unchanged;
                    insertPipelineTransfers(graph, options);
                    return PassStatus::Changed;
                  });
}

}  // namespace irc
