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
enum class DecoderFamily {
  Llama,
  Mistral,
  Qwen2,
  Qwen3,
  Mixtral,
  Qwen2Moe,
  Qwen3Moe,
  DeepseekV2,
  DeepseekV3,  // and Kimi-K2 (`kimi_k2`), the same architecture
  GptOss,
  Phi3,        // Phi-3 and Phi-4: Llama's layer with fused qkv_proj and gate_up_proj
  Granite,     // Llama's layer with Granite's embedding, residual, attention and logit multipliers
  Olmoe,       // OLMoE: q/k RMSNorm over the whole projection, 64 experts
  Gemma2,      // Gemma 2: four norms a layer, GeGLU, softcapped attention and logits, local/global layers
  Gemma3Text,  // Gemma 3's text decoder: Gemma 2's layer with per-head q/k norms, 5 local : 1 global
  Starcoder2,  // StarCoder2: LayerNorm with biases, a GeLU MLP (c_fc, c_proj), biases everywhere
  GptNeox,     // GPT-NeoX (Pythia): StarCoder2's kinds of layers, fused per-head qkv, partial rotary, parallel residual
  Falcon,  // Falcon (7B, 40B, 180B, 2-11B, RW): fused grouped qkv, multi-query or grouped, parallel attention, ALiBi or rotary
  Llama4,  // Llama 4's text decoder (Scout, Maverick): chunked rotary and global NoPE layers, MoE and dense layers, a shared
           // expert
};

// What a checkpoint's `quantization_config` says its weights are stored as (read, not built:
// a plan trains or serves the unquantized model in its precision, docs/config-json.md).
struct StoredQuantization {
  std::string method;  // quant_method as written: "fp8", "mxfp4", "bitsandbytes", ...
  std::string format;  // what the weights are, in words: "fp8 e4m3 in 128 x 128 blocks"
  int line = 0, column = 0;
};

// How a MoE router scores and picks its experts.
enum class Routing {
  SoftmaxTopK,          // softmax over all experts, the top k (Mixtral, Qwen-MoE)
  TopKSoftmax,          // the top k logits, softmax over them (GPT-OSS)
  SigmoidGroupLimited,  // sigmoid scores, top groups then top k by score + bias (DeepSeek-V3)
  SoftmaxGroupLimited,  // softmax scores, the groups with the best expert, then top k (DeepSeek-V2)
  TopKSigmoidInput,     // the top k logits' sigmoids, scaling each chosen expert's input, not its output (Llama 4)
};

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
  bool qkNorm = false;      // Qwen3, Gemma 3: RMSNorm of each head's queries and keys
  bool qkNormWide = false;  // OLMoE: RMSNorm over the whole q projection [a·d] and k projection [g·d]
  // Gemma: each norm's weight is an offset from 1 (x · (1 + w)); four norms a layer (the
  // attention's and the MLP's outputs normed before their residual adds); a GeGLU MLP (tanh GeLU).
  bool normOffset = false, sandwichNorms = false, gatedGelu = false;
  // StarCoder2: LayerNorm (weight and bias) for the layers' and the final norm; the MLP two
  // linear layers around a tanh GeLU (mlp.c_fc, mlp.c_proj), not a gated unit.
  bool layerNorm = false, plainMlp = false;
  // GPT-NeoX: its module names (gpt_neox.embed_in, .layers.N.attention.query_key_value, .mlp's
  // dense_h_to_4h and dense_4h_to_h, final_layer_norm, embed_out); q, k and v from one
  // projection whose rows are each head's [q; k; v]; the MLP's GeLU exact (hidden_act "gelu");
  // the attention and the MLP both reading the layer's input, their outputs added to it
  // (use_parallel_residual); rotary embedding on the first rotaryHeadDim of each head's dims
  // (rotary_pct; 0: all of them).
  bool neox = false, exactGelu = false, parallelResidual = false;
  int64_t rotaryHeadDim = 0;
  // Falcon: its module names (transformer.word_embeddings, .h.N.self_attention.query_key_value
  // and .dense, .mlp's dense_h_to_4h and dense_4h_to_h, ln_f, lm_head); one query_key_value
  // projection whose output, viewed [.., kvHeads, heads / kvHeads + 2, d], holds each key-value
  // group's queries, then its key, then its value (new_decoder_architecture: num_kv_heads groups;
  // multi_query: one; else one a head, [q; k; v]); `sharedNorm`: the attention and the MLP read
  // one LayerNorm's output (parallel_attn with input_layernorm alone); `alibi`: ALiBi's per-head
  // linear biases added to the scores, no rotary embedding.
  bool falcon = false, sharedNorm = false, alibi = false;
  // Llama 4: its module names (model.layers.N.feed_forward with .router, .experts and
  // .shared_expert; experts' weights [E, in, out]); per layer whether it has rotary embedding
  // (ropeLayer: no_rope_layers' 1s; the others are NoPE) and whether its attention is chunked
  // (chunkedLayer, attentionChunk tokens a chunk); the rotary layers' queries and keys L2-normed
  // (l2QkNorm); the NoPE layers' queries scaled by position (temperatureTuning: attn_scale,
  // floor_scale).
  bool llama4 = false, l2QkNorm = false, temperatureTuning = false;
  std::vector<bool> ropeLayer, chunkedLayer;
  int64_t attentionChunk = 0, floorScale = 8192;
  double attentionScale = 0.1;
  // Multipliers: of the embedding (Gemma √h, Granite's embedding_multiplier), of each block's
  // output before its residual add (Granite), of the scores (0: 1/√d; Gemma's
  // query_pre_attn_scalar^-½, Granite's attention_multiplier), the logits' divisor (Granite's
  // logits_scaling); tanh softcaps of the scores and the logits (0: none; Gemma 2).
  double embeddingScale = 1, residualScale = 1, scoreScale = 0, logitDivisor = 1;
  double attentionSoftcap = 0, logitSoftcap = 0;
  std::optional<StoredQuantization> quantization;
  // A mixture of experts (experts > 0): routed experts, per token, each expert's FFN, whether
  // the top-k weights are renormalised, a shared expert's FFN (0: none) with its sigmoid gate,
  // and per layer whether its MLP is sparse.
  int64_t experts = 0, expertsPerToken = 0, expertFfn = 0, sharedExpertFfn = 0;
  bool normTopK = true;
  std::vector<bool> sparseLayer;
  Routing routing = Routing::SoftmaxTopK;
  int64_t sharedExpertCount = 0;       // DeepSeek's shared experts: summed as one SwiGLU of sharedExpertFfn
  bool sharedExpertGate = false;       // Qwen2-MoE's sigmoid gate on its shared expert
  int64_t groups = 1, groupsKept = 1;  // DeepSeek's n_group, topk_group
  double routedScaling = 1;
  bool routerBias = false, expertBias = false;  // GPT-OSS
  double swigluLimit = 0;                       // GPT-OSS's clamped SwiGLU (0: plain)
  // DeepSeek-V2's and V3's multi-head latent attention (kvLora > 0): query and key-value compressions,
  // the per-head dims without and with rotary embedding, and the value head dim.
  int64_t qLora = 0, kvLora = 0, qkNope = 0, qkRope = 0, vHead = 0;
  int64_t rotaryDim() const { return kvLora > 0 ? qkRope : rotaryHeadDim > 0 ? rotaryHeadDim : headDim; }
  bool rotary() const { return !alibi; }
  bool ropeIn(int64_t layer) const { return rotary() && (ropeLayer.empty() || ropeLayer[layer]); }
  // Attention: GPT-OSS's learned per-head sink logits; sliding windows (0: none) per layer.
  bool sinks = false;
  int64_t slidingWindow = 0;
  std::vector<bool> slidingLayer;
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
