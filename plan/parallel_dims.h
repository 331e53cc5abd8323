#pragma once
// A plan's parallel degrees, the one spelling of them in irc: a model's `parallel:` block gives
// them (MindFormers' and Megatron's keys), the config.json frontend lays Megatron's layers out by
// them, the structural search enumerates them and its account reports them.
#include <cstdint>

namespace irc {

struct ParallelDims {
  int64_t dp = 1;   // data parallel: model replicas, each with its share of the batch
  int64_t tp = 1;   // tensor (model) parallel: each layer's products split column/row-wise
  int64_t pp = 1;   // pipeline stages
  int64_t cp = 1;   // context parallel: each sequence's tokens over cp ranks (dp x cp replicas)
  int64_t ep = 1;   // expert parallel: the routed experts over ep of the dp x cp ranks
  int64_t etp = 1;  // expert tensor parallel: each expert's FFN over etp of the tp ranks (1 or tp)
  int64_t v = 1;    // virtual stages a pipeline stage (Megatron's interleaved schedule)
  bool sp = false;  // sequence parallel: norms and residual adds split by tokens over tp
  // The ranks the degrees fill: dp x cp x tp of a stage, times the stages.
  int64_t devices() const { return dp * cp * tp * pp; }
  bool operator==(const ParallelDims&) const = default;
};

}  // namespace irc
