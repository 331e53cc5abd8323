#pragma once
// `--plan-out FILE`: the compiled plan as a file to edit and compile again (docs/search.md).
// A YAML model comes out as a model (dumps/model_yaml_writer.h's writePlanModelYaml); a plan
// over an ONNX graph (`graph: FILE.onnx`) as the same plan — its graph, dims, `modules:` and
// `strategies:` kept — with what the operator-level search chose added to `strategies:` by node
// name and `search_mode` sharding_propagation, so that the ONNX graph's module paths, value names
// and buffers stay the file's.
#include <optional>
#include <string>

#include "ir/graph.h"
#include "passes/manager/compile_options.h"

namespace irc::cli {

// `graph` is the graph after strategy propagation (before anything is inserted), `settings` the
// compile's. `modelPath` is the file compiled, `outPath` where the plan goes. The error, if the
// input plan cannot be read back.
std::optional<std::string> planOutText(const Graph& graph, const ParallelSettings& settings, const std::string& modelPath,
                                       const std::string& outPath, std::string& text);

}  // namespace irc::cli
