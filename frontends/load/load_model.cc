#include "frontends/load/load_model.h"

#include <filesystem>

#include <fmt/format.h>

#include "frontends/hf_config/decoder_model.h"
#include "frontends/mindspore/strategy_checkpoint.h"
#include "frontends/onnx/onnx_frontend.h"
#include "frontends/yaml/yaml_frontend.h"
#include "ops/batch_split.h"

namespace irc {

bool isOnnxFile(const std::string& path, const std::string& bytes) {
  return std::filesystem::path(path).extension() == ".onnx" || looksLikeOnnx(bytes);
}

namespace {

// The graph as its frontend reads it, without what every load does after.
void readGraph(ModelFile& file, const std::string& path, const std::string& text, const LoadOptions& options) {
  const std::string shownPath = path == "-" ? "<stdin>" : path;
  file.config = isConfigFile(path);
  if (file.config) {
    file.diags = std::make_unique<DiagnosticEngine>(shownPath, text);
    int64_t active = -1;
    auto model = decoderModelText(text, options.dims, modelStem(path), 1, *file.diags, &active);
    if (!model) return;
    DiagnosticEngine modelDiags(shownPath + " (as a model)", *model);
    if (auto loaded = loadModel(*model, modelDiags, {modelStem(path)})) {
      file.loaded = LoadedGraph{std::move(loaded->graph), {}, {}, {active, true}};
    } else {
      for (const Diagnostic& d : modelDiags.diagnostics())
        file.diags->error(
            {}, fmt::format("the model built from {} is rejected (at {} of it): {}", shownPath, formatLoc(d.loc), d.message));
    }
    return;
  }
  file.onnx = isOnnxFile(path, text);
  if (file.onnx) {
    file.diags = std::make_unique<DiagnosticEngine>(shownPath, "");
    OnnxOptions onnxOptions;
    onnxOptions.defaultName = modelStem(path);
    onnxOptions.dims = options.dims;
    onnxOptions.checkShapesWithOnnx = options.onnxShapeCheck;
    onnxOptions.opaqueUnsupported = options.opaqueUnsupported;
    onnxOptions.keepParameterData = options.keepParameterData;
    if (path != "-") onnxOptions.externalDataDir = std::filesystem::path(path).parent_path().string();
    file.loaded = loadOnnxModel(text, *file.diags, onnxOptions);
    return;
  }
  file.diags = std::make_unique<DiagnosticEngine>(shownPath, text);
  std::string dir = path == "-" ? "" : std::filesystem::path(path).parent_path().string();
  file.loaded = loadModel(
      text, *file.diags,
      {modelStem(path), dir, options.dims, options.onnxShapeCheck, options.opaqueUnsupported, options.keepParameterData});
}

// `input_batch: step`: the inputs hold the whole step; the program is one micro-batch's.
bool splitStepBatch(LoadedGraph& loaded, DiagnosticEngine& diags) {
  const ParallelConfig& p = loaded.parallel;
  if (!p.inputsHoldStep || p.microBatches <= 1) return true;
  int64_t step = inputBatchOf(loaded.graph);
  auto error = step % p.microBatches != 0
                   ? std::optional<std::string>(
                         fmt::format("micro_batches {} does not divide the step's batch of {} samples", p.microBatches, step))
                   : splitBatch(loaded.graph, step / p.microBatches);
  if (error) diags.error(p.loc, fmt::format("input_batch: step: {}", *error));
  return !error;
}

}  // namespace

ModelFile loadModelFile(const std::string& path, const std::string& text, const LoadOptions& options) {
  ModelFile file;
  readGraph(file, path, text, options);
  if (!file.loaded) return file;
  LoadedGraph& loaded = *file.loaded;
  // An ONNX graph or a config.json's decoder has no parallel block: data parallel over
  // --device-num devices (docs/onnx.md).
  if (file.onnx || file.config)
    static_cast<ParallelSettings&>(loaded.parallel) = onnxDefaultSettings(options.deviceNum.value_or(1));
  if (!splitStepBatch(loaded, *file.diags)) {
    file.loaded.reset();
    return file;
  }
  // A strategy checkpoint: the given one, else the model's `strategy_ckpt_load` (relative to
  // the model file); its problems are located in it.
  std::string ckpt = strategyCheckpointPath(loaded.parallel, path, options.strategyCkptIn);
  if (ckpt.empty()) return file;
  auto ckptText = readModelText(ckpt, file.error);
  if (!ckptText) {
    file.loaded.reset();
    return file;
  }
  auto ckptDiags = std::make_unique<DiagnosticEngine>(ckpt, *ckptText);
  if (!applyStrategyCheckpoint(loaded.graph, *ckptText, *ckptDiags)) {
    file.diags = std::move(ckptDiags);
    file.loaded.reset();
  }
  return file;
}

std::string strategyCheckpointPath(const ParallelConfig& model, const std::string& modelPath, const std::string& given) {
  if (!given.empty() || model.strategyCkptLoad.empty()) return given;
  std::filesystem::path p(model.strategyCkptLoad);
  return p.is_absolute() || modelPath == "-" ? p.string() : (std::filesystem::path(modelPath).parent_path() / p).string();
}

}  // namespace irc
