#include "frontends/load_model.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "frontends/hf_config/decoder_model.h"
#include "frontends/mindspore/strategy_checkpoint.h"
#include "frontends/onnx/onnx_frontend.h"
#include "frontends/yaml/yaml_frontend.h"
#include "ir/limits.h"
#include "ops/batch_split.h"

namespace irc {

std::optional<std::string> readModelText(const std::string& path, std::string& error) {
  // At most kMaxModelBytes: `/dev/zero` or a runaway file is refused, not read until memory
  // runs out.
  auto readCapped = [&](std::istream& in, const std::string& shown) -> std::optional<std::string> {
    std::string text;
    char buffer[1 << 16];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
      text.append(buffer, static_cast<size_t>(in.gcount()));
      if (static_cast<int64_t>(text.size()) > kMaxModelBytes) {
        error = fmt::format("cannot read '{}': it is larger than {} bytes (docs/limits.md)", shown, kMaxModelBytes);
        return std::nullopt;
      }
    }
    if (in.bad()) {
      error = fmt::format("cannot read '{}': {}", shown, std::strerror(errno));
      return std::nullopt;
    }
    return text;
  };
  if (path == "-") return readCapped(std::cin, "<stdin>");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    error = fmt::format("cannot read '{}': it is a directory; give a model file", path);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("cannot read '{}': {}", path, std::strerror(errno));
    return std::nullopt;
  }
  return readCapped(in, path);
}

std::string modelStem(const std::string& path) {
  if (path == "-") return "stdin";
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

bool isOnnxFile(const std::string& path, const std::string& bytes) {
  return std::filesystem::path(path).extension() == ".onnx" || looksLikeOnnx(bytes);
}

bool isConfigFile(const std::string& path) { return std::filesystem::path(path).extension() == ".json"; }

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
      file.loaded = LoadedGraph{std::move(loaded->graph), {}, {}};
      file.loaded->graph.activeParameters = active;
      file.loaded->graph.modulesFromConfig = true;
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
