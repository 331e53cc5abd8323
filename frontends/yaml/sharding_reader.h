#pragma once
// Reads the parallel annotations of a model: an op's in_strategy / out_strategy / in_layout /
// out_layout, and a tensor's `sharding` in any of its four notations. Checks everything that does
// not depend on the op's own sharding rule (ranks, divisibility, device counts, aliases, axes
// used twice); the op-specific checks belong to the op rules.
#include <optional>
#include <string>
#include <vector>

#include "frontends/document/yaml_reader.h"
#include "ir/graph.h"
#include "plan/parallel_config.h"

namespace irc {

// What an annotation is checked against: the tensors it describes, in order.
struct AnnotatedTensor {
  std::string name;
  Shape shape;
};

std::optional<ShardStrategy> readStrategy(YamlReader& reader, const YamlNode& node, std::string_view what,
                                          const std::vector<AnnotatedTensor>& tensors, int64_t deviceNum);

std::optional<std::vector<DimAxes>> readLayouts(YamlReader& reader, const YamlNode& node, std::string_view what,
                                                const std::vector<AnnotatedTensor>& tensors, const ParallelConfig& parallel,
                                                SourceLoc keyLoc);

// `opResult`: the sharding constrains an op's result, which may stay partial (placements
// `Partial()`, sbp `P`, Shardy's `unreduced: [axes]`); an input's or parameter's may not.
std::optional<TensorSharding> readTensorSharding(YamlReader& reader, const YamlNode& node, const AnnotatedTensor& tensor,
                                                 const ParallelConfig& parallel, bool opResult = false);

}  // namespace irc
