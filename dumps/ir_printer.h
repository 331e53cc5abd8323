#pragma once
// Graph -> MindSpore text IR (spec/ir-dump.md). A pure function of the graph and the options:
// no addresses, hash orders, times or paths, so equal graphs print equal bytes.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "plan/parallel_config.h"
#include "ir/graph.h"

namespace irc {

struct PrintOptions {
  int64_t rank = 0;           // printed as `global_rank` in the header
  bool locations = false;     // `# In file model.yaml:12:5` comment lines
  std::string modelFileName;  // for those lines
  bool scopes = false;        // `# scope: m.model.layers.0.self_attn.q_proj` lines (torch module paths)
  // The compile's settings (the model's parallel block with the command line's overrides and
  // the search's choices), which the whole dump reads: the header, the mesh of layout-form
  // strategies. Null only for a bare graph printed alone (tests): the defaults (one device).
  const ParallelSettings* settings = nullptr;
};

std::string printGraph(const Graph& graph, const PrintOptions& options);
// The same text written to `out` as it is produced (in blocks of about 1 MiB), never held whole.
void printGraph(const Graph& graph, const PrintOptions& options, std::ostream& out);

// Pieces the printer uses, exposed for tests and for other text outputs (reports, explain).
std::string formatTensorType(const TensorType& type);               // <Tensor[Float32], (64, 64)>
std::string formatTupleType(const std::vector<TensorType>& types);  // <Tuple[Tensor[Float32]*2], TupleShape((8), (8))>
std::string formatStrategy(const ShardStrategy& strategy);          // ((2, 1), (1, 4))

}  // namespace irc
