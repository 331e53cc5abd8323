#pragma once
// The one way a file becomes a graph (docs/architecture.md): the file read (or stdin), its
// format told by its name and first byte, and the ONNX or YAML frontend run on it. Every
// subcommand loads through it (tools/cli_util.h's loadModelOrReport adds the command line's
// overrides and prints what went wrong); a model's strategy checkpoint is read here too.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "ir/diagnostics.h"
#include "ir/graph.h"
#include "ir/parallel_config.h"
#include "ir/tensor_value.h"

namespace irc {

// The file's text ("-" reads stdin), at most kMaxModelBytes; nullopt with `error` set when it
// cannot be read.
std::optional<std::string> readModelText(const std::string& path, std::string& error);
std::string modelStem(const std::string& path);  // "examples/ffn.yaml" -> "ffn"; "-" -> "stdin"
// An ONNX file: named .onnx, or starting as a serialized ModelProto does.
bool isOnnxFile(const std::string& path, const std::string& bytes);
// A Hugging Face config.json (docs/config-json.md): named .json.
bool isConfigFile(const std::string& path);

struct LoadOptions {
  std::map<std::string, int64_t> dims;  // an ONNX graph's symbolic dims
  bool onnxShapeCheck = false;
  bool opaqueUnsupported = false;
  bool keepParameterData = false;  // an ONNX file's own weights, for verify --inputs
};

struct ModelFile {
  bool onnx = false;
  bool config = false;                      // a config.json's decoder: like an ONNX graph, no settings of its own
  std::unique_ptr<DiagnosticEngine> diags;  // located at the file (an ONNX file's by node)
  std::optional<Graph> graph;               // nullopt: rejected, `diags` says why
  ParallelConfig parallel;                  // a YAML model's or plan's settings; an ONNX graph has none
  std::map<ValueId, TensorValue> parameterData;
};

// The graph `text` (read from `path`) holds, and a YAML model's or plan's settings; an ONNX
// graph's and a config.json's are left for the caller (data parallel, onnxDefaultSettings).
ModelFile loadModelFile(const std::string& path, const std::string& text, const LoadOptions& options);

// The strategy checkpoint a model loads: `given` (the command line's), else its
// `strategy_ckpt_load` relative to the model's folder; "" for none.
std::string strategyCheckpointPath(const ParallelConfig& model, const std::string& modelPath, const std::string& given);

}  // namespace irc
