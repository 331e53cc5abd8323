#pragma once
// A graph as irc's YAML model (spec/model-format.md), for `irc import MODEL.onnx`: inputs and
// parameters with shapes and dtypes, every op with its operands (values by name, constants in
// place) and its attributes that differ from their defaults, the configured strategies, and the
// outputs. Loading the text gives back the same graph (op results are referred to by their op's
// name, as the format does; the ONNX tensor names of op results are not kept).
#include <string>

#include "ir/graph.h"

namespace irc {

// `settings`: the parallel block written (device_num, search_mode); the graph's own when null.
std::string writeModelYaml(const Graph& graph, const ParallelSettings* settings = nullptr);

}  // namespace irc
