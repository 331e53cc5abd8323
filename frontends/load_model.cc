#include "frontends/load_model.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "frontends/hf_config/decoder_model.h"
#include "frontends/onnx/onnx_frontend.h"
#include "frontends/yaml/yaml_frontend.h"
#include "ir/limits.h"

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

ModelFile loadModelFile(const std::string& path, const std::string& text, const LoadOptions& options) {
  ModelFile file;
  const std::string shownPath = path == "-" ? "<stdin>" : path;
  file.config = isConfigFile(path);
  if (file.config) {
    file.diags = std::make_unique<DiagnosticEngine>(shownPath, text);
    int64_t active = -1;
    auto model = decoderModelText(text, options.dims, modelStem(path), 1, *file.diags, &active);
    if (!model) return file;
    DiagnosticEngine modelDiags(shownPath + " (as a model)", *model);
    if (auto loaded = loadModel(*model, modelDiags, {modelStem(path)})) {
      file.graph = std::move(loaded->graph);
      file.graph->activeParameters = active;
      file.graph->modulesFromConfig = true;
    } else {
      for (const Diagnostic& d : modelDiags.diagnostics())
        file.diags->error(
            {}, fmt::format("the model built from {} is rejected (at {} of it): {}", shownPath, formatLoc(d.loc), d.message));
    }
    return file;
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
    if (auto loaded = loadOnnxModel(text, *file.diags, onnxOptions)) {
      file.parameterData = std::move(loaded->parameterData);
      file.graph = std::move(loaded->graph);
    }
    return file;
  }
  file.diags = std::make_unique<DiagnosticEngine>(shownPath, text);
  std::string dir = path == "-" ? "" : std::filesystem::path(path).parent_path().string();
  auto loaded = loadModel(text, *file.diags,
                          {modelStem(path), dir, options.dims, options.onnxShapeCheck, options.opaqueUnsupported,
                           options.keepParameterData ? &file.parameterData : nullptr});
  if (loaded) {
    file.graph = std::move(loaded->graph);
    file.parallel = std::move(loaded->parallel);
  }
  return file;
}

std::string strategyCheckpointPath(const ParallelConfig& model, const std::string& modelPath, const std::string& given) {
  if (!given.empty() || model.strategyCkptLoad.empty()) return given;
  std::filesystem::path p(model.strategyCkptLoad);
  return p.is_absolute() || modelPath == "-" ? p.string() : (std::filesystem::path(modelPath).parent_path() / p).string();
}

}  // namespace irc
