#include "passes/pipeline_transfers.h"

#include "passes/analysis/pipeline_split.h"

namespace irc {
namespace {

class PipelineTransferPass : public Pass {
 public:
  explicit PipelineTransferPass(const CompileOptions& options) : options_(options) {}
  std::string_view name() const override { return "pipeline_transfers"; }
  std::string_view dumpName() const override { return ""; }  // a step of redistribution's stage

  PassStatus run(Graph& graph, PassContext&) override {
    if (options_.pipelineStages <= 1) return PassStatus::Unchanged;
    insertPipelineTransfers(graph, options_);
    return PassStatus::Changed;
  }

 private:
  CompileOptions options_;
};

}  // namespace

std::unique_ptr<Pass> createPipelineTransferPass(const CompileOptions& options) {
  return std::make_unique<PipelineTransferPass>(options);
}

}  // namespace irc
