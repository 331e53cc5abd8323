#pragma once
// The model file (spec/model-format.md) or a plan (docs/onnx.md) -> Graph and settings. Every node keeps its YAML position; every
// problem is a located diagnostic (all of them, up to the engine's cap); shapes and dtypes are
// inferred for every op. Returns nullopt when the model was rejected.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "ir/diagnostics.h"
#include "ir/graph.h"
#include "plan/parallel_config.h"
#include "frontends/loaded_graph.h"
#include "ir/tensor_value.h"

namespace irc {

struct FrontendOptions {
  std::string defaultName;  // the graph name when the model has no `name` (the file's stem)
  // A plan's `graph: FILE.onnx` is relative to the plan's folder; `--dim NAME=VALUE` bindings win
  // over the plan's `dims`.
  std::string modelDir;
  std::map<std::string, int64_t> dims;
  bool onnxShapeCheck = false;     // OnnxOptions::checkShapesWithOnnx for a plan's graph
  bool opaqueUnsupported = false;  // OnnxOptions::opaqueUnsupported for a plan's graph
  // Keep a plan's ONNX file's weights (LoadedGraph::parameterData), for `irc verify --inputs`,
  // which runs the file's own numbers.
  bool keepParameterData = false;
};

std::optional<LoadedGraph> loadModel(const std::string& text, DiagnosticEngine& diags, const FrontendOptions& options);

}  // namespace irc
