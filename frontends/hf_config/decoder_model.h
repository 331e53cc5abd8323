#pragma once
// A decoder read from a config.json, written as an irc YAML model (docs/config-json.md): the
// graph transformers builds for one micro-batch of `batch` sequences of `sequence` tokens, in irc's
// ops, each op carrying the torch module it belongs to (`model.layers.3.mlp.experts`), so plans'
// `modules:`, `recompute:` and `stages:` globs apply as to an ONNX export of the same model. Given
// parallel degrees, the model also carries the strategies Megatron-Core and MindFormers run
// (column/row pairs, vocabulary-parallel head, experts over the expert-parallel group folded
// inside DP x CP (x TP), their FFN split over TP with expert tensor parallelism, tokens dispatched
// to them by AlltoAll) and the layers' pipeline stages.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "frontends/hf_config/hf_config.h"
#include "plan/parallel_dims.h"

namespace irc {

struct DecoderShape {
  int64_t batch = 1, sequence = 1;
  // Each expert's slots per sequence, as a multiple of its balanced share S·k/E: MindSpore's
  // `capacity_factor` (choices past it dropped), or a dropless run's busiest expert over the
  // mean (`imbalance`: every expert's grouped product then runs the busiest's tokens). 1: balanced.
  double capacityFactor = 1;
};

// A micro-batch of `batch` sequences of the positions the model was trained for, at most 4,096
// (the dims a plan or `irc import --dim` does not give).
DecoderShape defaultShape(const DecoderConfig& config, int64_t batch);

// Why the model cannot be built for `shape` (a micro-batch past 2^24 sequences or tokens, an odd
// rotary dim), or nullopt.
std::optional<std::string> shapeError(const DecoderConfig& config, const DecoderShape& shape);

// A config file's decoder as a YAML model without strategies on `deviceNum` devices, its dims
// (`batch`, `sequence`) from `dims` or the defaults; nullopt after reporting in `diags` (the
// config's text): `irc CONFIG.json` and `irc import CONFIG.json`. `activeParameters` gets the
// config's count.
std::optional<std::string> decoderModelText(const std::string& configText, const std::map<std::string, int64_t>& dims,
                                            const std::string& name, int64_t deviceNum, DiagnosticEngine& diags,
                                            int64_t* activeParameters = nullptr);

// The YAML model; `degrees` null: no strategies, on `deviceNum` devices; with pipeline stages
// `microBatches` a step.
std::string decoderModelYaml(const DecoderConfig& config, const DecoderShape& shape, const ParallelDims* degrees,
                             int64_t microBatches, const std::string& name, int64_t deviceNum = 1);

}  // namespace irc
