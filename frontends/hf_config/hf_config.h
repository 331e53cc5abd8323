#pragma once
// A Hugging Face `config.json` (docs/config-json.md): the keys that shape a decoder's graph, read
// for the families irc builds; every other key is ignored, as transformers' own classes ignore
// what they do not use. Errors are located in the file (line and column of the offending key).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostics.h"

namespace irc {

// The families' decoder layers (transformers' `model_type`).
enum class DecoderFamily { Llama, Mistral, Qwen2, Qwen3, Mixtral, Qwen2Moe, Qwen3Moe };

struct DecoderConfig {
  DecoderFamily family = DecoderFamily::Llama;
  std::string modelType;  // as written: "llama", "mixtral", ...
  int64_t hidden = 0, intermediate = 0, layers = 0, heads = 0, kvHeads = 0, headDim = 0, vocab = 0;
  int64_t maxPositions = 0;
  double rmsEps = 1e-6;
  bool tiedEmbeddings = false;
  bool attentionBias = false;  // q, k, v (and o for Llama's attention_bias) biases
  bool outputBias = false;     // o_proj's bias (Llama's attention_bias; Qwen2 has none)
  bool mlpBias = false;
  bool qkNorm = false;  // Qwen3: RMSNorm of each head's queries and keys
  // A mixture of experts (experts > 0): routed experts, per token, each expert's FFN, whether
  // the top-k weights are renormalised, a shared expert's FFN (0: none) with its sigmoid gate,
  // and per layer whether its MLP is sparse.
  int64_t experts = 0, expertsPerToken = 0, expertFfn = 0, sharedExpertFfn = 0;
  bool normTopK = true;
  std::vector<bool> sparseLayer;
};

const std::vector<std::string>& supportedModelTypes();

// The config `text` (read from `path`, which names the file in diagnostics); nullopt after
// reporting what is wrong at its line and column.
std::optional<DecoderConfig> readDecoderConfig(const std::string& text, DiagnosticEngine& diags);

// Every weight of the Hugging Face model, and those one token's forward pass multiplies with
// (docs/config-json.md; ../shared/configs/README.md's conventions).
int64_t parameterCount(const DecoderConfig& c);
int64_t activeParameterCount(const DecoderConfig& c);

}  // namespace irc
