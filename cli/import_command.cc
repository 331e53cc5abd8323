// `irc import DUMP.ir [-o MODEL.yaml] [--device-num N] [--name NAME]`: a MindSpore (or irc)
// parse / step_parallel_begin dump back into irc's YAML model (frontends/mindspore/mindspore_import.h).
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "dumps/dump_writer.h"
#include "dumps/model_yaml_writer.h"
#include "frontends/hf_config/decoder_model.h"
#include "frontends/mindspore/mindspore_import.h"
#include "frontends/onnx/onnx_frontend.h"
#include "ops/op_sharding.h"
#include "ops/op_defs.h"
#include "ops/op_rule.h"
#include "ir/limits.h"
#include "cli/cli_util.h"
#include "cli/command_specs.h"
#include "cli/commands.h"

namespace irc::cli {
namespace {

// An ONNX file as irc's YAML: the graph the ONNX frontend builds (nodes mapped, constants
// folded), loaded as every subcommand loads a file, written back in the model format.
std::optional<std::string> importOnnx(const std::string& bytes, const std::string& path, const ImportOptions& options,
                                      const std::map<std::string, int64_t>& dims, ColorMode color) {
  LoadOptions load;
  load.dims = dims;
  if (options.deviceNum > 0) load.deviceNum = options.deviceNum;
  ModelFile file = loadModelFile(path, bytes, load);
  if (!file.loaded) {
    file.diags->render(std::cerr, useColor(color, stderr));
    return std::nullopt;
  }
  file.loaded->graph.name = options.name;
  return writeModelYaml(file.loaded->graph, file.loaded->parallel);
}

// A Hugging Face config.json as the decoder irc builds from it (docs/config-json.md).
std::optional<std::string> importConfig(const std::string& text, const std::string& path, const ImportOptions& options,
                                        const std::map<std::string, int64_t>& dims, ColorMode color) {
  DiagnosticEngine diags(path, text);
  auto model = decoderModelText(text, dims, options.name, options.deviceNum > 0 ? options.deviceNum : 1, diags);
  if (!model) diags.render(std::cerr, useColor(color, stderr));
  return model;
}

ExitStatus writeImported(const std::string& model, const std::string& output) {
  if (output.empty() || output == "-") {
    std::cout << model;
    return ExitStatus::Ok;
  }
  if (auto err = writeFileAtomically(output, model)) {
    std::cerr << "irc: error: " << *err << "\n";
    return ExitStatus::Rejected;
  }
  return ExitStatus::Ok;
}

}  // namespace

ExitStatus runImport(const std::vector<std::string>& args) {
  const CommandSpec& spec = commandSpec("import");
  ArgScanner scan(args, flagsWithValue(spec), switchFlags(spec));
  std::string dump, output;
  ImportOptions options;
  std::map<std::string, int64_t> dims;
  ColorMode color = ColorMode::Auto;
  while (!scan.done()) {
    auto item = scan.next();
    if (item.flag.empty()) {
      if (!dump.empty()) throw UsageError("irc import takes one dump");
      dump = item.value;
    } else if (item.flag == "-o" || item.flag == "--output") {
      output = item.value;
    } else if (item.flag == "--device-num") {
      options.deviceNum = parsePositiveIntArg(item.flag, item.value);
    } else if (item.flag == "--name") {
      options.name = item.value;
    } else if (item.flag == "--dim") {
      parseDimArg(item.value, dims);
    } else if (item.flag == "--color") {
      color = parseColorMode(item.value);
    }
  }
  if (dump.empty()) throw UsageError("usage: irc import DUMP.ir|MODEL.onnx|config.json [-o MODEL.yaml] [--device-num N]");
  std::string error;
  auto text = readModelText(dump, error);
  if (!text) {
    std::cerr << "irc: error: " << error << "\n";
    return ExitStatus::Rejected;
  }
  if (options.name.empty()) options.name = modelStem(dump);
  if (isConfigFile(dump)) {
    std::optional<std::string> model = importConfig(*text, dump, options, dims, color);
    if (!model) return ExitStatus::Rejected;
    return writeImported(*model, output);
  }
  if (isOnnxFile(dump, *text)) {
    std::optional<std::string> model = importOnnx(*text, dump, options, dims, color);
    if (!model) return ExitStatus::Rejected;
    return writeImported(*model, output);
  }
  DiagnosticEngine diags(dump == "-" ? "<stdin>" : dump, *text);
  std::optional<LoadedGraph> imported = importMindSporeDump(*text, options, diags);
  if (!imported) {
    diags.render(std::cerr, useColor(color, stderr));
    return ExitStatus::Rejected;
  }
  return writeImported("# Imported by `irc import` from a dump; strategies are those the dump configured.\n" +
                           writeModelYaml(imported->graph, imported->parallel),
                       output);
}

}  // namespace irc::cli
