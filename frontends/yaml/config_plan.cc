// A plan whose `graph:` is a Hugging Face config.json (docs/config-json.md): the decoder built
// from it as a YAML model (frontends/hf_config/decoder_model.h), loaded as any model file is; the
// plan's parallel degrees, when given, become that model's strategies and pipeline stages.
#include <algorithm>

#include <fmt/format.h>

#include "frontends/hf_config/decoder_model.h"
#include "frontends/hf_config/hf_config.h"
#include "frontends/hf_config/parallel_degrees.h"
#include "frontends/model_text.h"
#include "frontends/yaml/model_loader.h"

namespace irc::model_loading {

bool PlanReader::loadConfigGraph(const YamlNode& graphNode, const std::string& file, const std::string& bytes,
                                 const std::map<std::string, int64_t>& dims, const std::optional<YamlNode>& moe) {
  DiagnosticEngine configDiags(file, bytes);
  std::optional<DecoderConfig> config = readDecoderConfig(bytes, configDiags);
  if (!config) {
    for (const Diagnostic& d : configDiags.diagnostics())
      reader_.error(graphNode, fmt::format("{}{}: {}", file, d.loc.valid() ? ":" + formatLoc(d.loc) : "", d.message));
    return false;
  }
  // Its warnings (a stored quantization) at the plan's graph line, as its errors are.
  for (const Diagnostic& d : configDiags.diagnostics())
    if (d.severity == Severity::Warning)
      reader_.diags().warning(locOf(graphNode),
                              fmt::format("{}{}: {}", file, d.loc.valid() ? ":" + formatLoc(d.loc) : "", d.message));
  // dims: a micro-batch of `batch` sequences (data_parallel's, one each, by default) of
  // `sequence` tokens (the positions the model was trained for, at most 4,096, by default).
  DecoderShape shape = defaultShape(*config, parallel_.degrees.dp);
  for (const auto& [name, size] : dims) {
    if (name == "batch") shape.batch = size;
    else if (name == "sequence") shape.sequence = size;
    else reader_.error(graphNode, fmt::format("dims.{}: a config.json model has the dims batch and sequence", name));
  }
  if (auto e = shapeError(*config, shape)) reader_.error(graphNode, *e);
  if (moe) readMoe(*moe, config->experts > 0, shape);
  std::optional<ParallelDims> degrees;
  if (parallel_.degreesAt.any()) {
    degrees = checkDegrees(parallel_, *config, shape, reader_.diags());
    // The frameworks' plans leave devices a strategy does not use replicated, and MindFormers
    // dispatches tokens to their experts by AlltoAll (`enable_alltoall`).
    parallel_.fullyUseDevices = false;
    parallel_.enableAlltoall = true;
  }
  if (reader_.diags().hasErrors()) return false;
  const std::string text =
      decoderModelYaml(*config, shape, degrees ? &*degrees : nullptr, parallel_.microBatches, modelStem(file));
  DiagnosticEngine modelDiags(file + " (as a model)", text);
  FrontendOptions modelOptions;
  modelOptions.defaultName = modelStem(file);
  auto loaded = loadModel(text, modelDiags, modelOptions);
  if (!loaded) {
    // The built model is rejected: a size past the limits on shapes (docs/limits.md).
    for (const Diagnostic& d : modelDiags.diagnostics())
      reader_.error(graphNode,
                    fmt::format("the model built from {} is rejected (at {} of it): {}", file, formatLoc(d.loc), d.message));
    return false;
  }
  graph_ = std::move(loaded->graph);
  facts_ = {activeParameterCount(*config), true};
  degreeStages_ = degrees && degrees->pp > 1;
  return true;
}

void PlanReader::readMoe(const YamlNode& node, bool hasExperts, DecoderShape& shape) {
  if (!reader_.checkMap(node, "moe", {"capacity_factor", "imbalance"})) return;
  if (!hasExperts) {
    reader_.error(node, "moe: the config's model has no experts");
    return;
  }
  auto factor = reader_.optional(node, "capacity_factor"), imbalance = reader_.optional(node, "imbalance");
  if (factor && imbalance) {
    reader_.error(*imbalance,
                  "moe gives both capacity_factor (choices past it dropped) and imbalance (dropless, the busiest "
                  "expert's load): give one");
    return;
  }
  for (auto [key, given] : {std::pair{"capacity_factor", factor}, {"imbalance", imbalance}}) {
    if (!given) continue;
    auto f = reader_.number(*given, key);
    if (!f) continue;
    // A capacity below the balanced share drops choices even when routing is balanced (MindSpore
    // allows it); an imbalance is the busiest expert's load over the mean, at least 1.
    double least = std::string(key) == "imbalance" ? 1.0 : 1e-3;
    if (!(*f >= least) || *f > 1024) reader_.error(*given, fmt::format("moe.{} must be in {} .. 1024; got {}", key, least, *f));
    else shape.capacityFactor = *f;
  }
}

}  // namespace irc::model_loading
