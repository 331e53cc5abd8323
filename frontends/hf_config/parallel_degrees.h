#pragma once
// MindFormers' parallel degrees over a config.json's model (docs/config-json.md): checked against
// the model, the micro-batch and the device count, each error at the degree's key naming the
// values that would be valid.
#include <optional>

#include "frontends/hf_config/decoder_model.h"
#include "ir/diagnostics.h"
#include "plan/parallel_config.h"
#include "plan/parallel_dims.h"

namespace irc {

// nullopt after reporting; the degrees not given are 1 (data_parallel: what the devices leave).
std::optional<ParallelDims> checkDegrees(const ParallelConfig& parallel, const DecoderConfig& config, const DecoderShape& shape,
                                         DiagnosticEngine& diags);

}  // namespace irc
