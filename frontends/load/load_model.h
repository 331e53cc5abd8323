#pragma once
// The one way a file becomes a graph (docs/architecture.md): the file read (or stdin), its
// format told by its name and first byte, and the ONNX, config.json or YAML frontend run on it;
// then what every load does to the result: an ONNX graph's (or a config.json's) default
// settings, the step's batch split into micro-batches (`input_batch: step`), and a strategy
// checkpoint applied. Every subcommand loads through it (cli/cli_util.h's loadModelOrReport
// maps the command line's flags onto LoadOptions and prints what went wrong).
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "frontends/loaded_graph.h"
#include "frontends/model_text.h"
#include "ir/diagnostics.h"
#include "ir/graph.h"
#include "plan/parallel_config.h"
#include "ir/tensor_value.h"

namespace irc {

// An ONNX file: named .onnx, or starting as a serialized ModelProto does.
bool isOnnxFile(const std::string& path, const std::string& bytes);

struct LoadOptions {
  std::map<std::string, int64_t> dims;  // an ONNX graph's symbolic dims
  bool onnxShapeCheck = false;
  bool opaqueUnsupported = false;
  bool keepParameterData = false;  // an ONNX file's own weights, for verify --inputs
  // An ONNX graph's or config.json's devices (data parallel over them; default 1).
  std::optional<int64_t> deviceNum;
  std::string strategyCkptIn;  // a checkpoint to apply, over the model's `strategy_ckpt_load`
};

struct ModelFile {
  bool onnx = false;
  bool config = false;  // a config.json's decoder: like an ONNX graph, no settings of its own
  // Located at the file (an ONNX file's by node; a strategy checkpoint's problems at the
  // checkpoint's lines).
  std::unique_ptr<DiagnosticEngine> diags;
  std::optional<LoadedGraph> loaded;  // nullopt: rejected, `diags` (or `error`) says why
  std::string error;                  // a file that could not be read (the checkpoint)
};

// The graph `text` (read from `path`) holds with its settings, batch split and checkpoint.
ModelFile loadModelFile(const std::string& path, const std::string& text, const LoadOptions& options);

// The strategy checkpoint a model loads: `given` (the command line's), else its
// `strategy_ckpt_load` relative to the model's folder; "" for none.
std::string strategyCheckpointPath(const ParallelConfig& model, const std::string& modelPath, const std::string& given);

}  // namespace irc
