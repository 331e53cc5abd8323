#include "frontends/hf_config/hf_config.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/exceptions.h>

#include "frontends/json_location.h"
#include "frontends/document/yaml_document.h"
#include "frontends/document/yaml_reader.h"
#include "ir/suggest.h"

namespace irc {
namespace {

const std::map<std::string, DecoderFamily>& families() {
  static const std::map<std::string, DecoderFamily> f = {{"llama", DecoderFamily::Llama},
                                                         {"mistral", DecoderFamily::Mistral},
                                                         {"qwen2", DecoderFamily::Qwen2},
                                                         {"qwen3", DecoderFamily::Qwen3},
                                                         {"mixtral", DecoderFamily::Mixtral},
                                                         {"qwen2_moe", DecoderFamily::Qwen2Moe},
                                                         {"qwen3_moe", DecoderFamily::Qwen3Moe},
                                                         {"deepseek_v2", DecoderFamily::DeepseekV2},
                                                         {"deepseek_v3", DecoderFamily::DeepseekV3},
                                                         {"gpt_oss", DecoderFamily::GptOss},
                                                         {"kimi_k2", DecoderFamily::DeepseekV3},
                                                         {"phi3", DecoderFamily::Phi3},
                                                         {"granite", DecoderFamily::Granite},
                                                         {"olmoe", DecoderFamily::Olmoe},
                                                         {"gemma2", DecoderFamily::Gemma2},
                                                         {"gemma3_text", DecoderFamily::Gemma3Text},
                                                         {"starcoder2", DecoderFamily::Starcoder2},
                                                         {"gpt_neox", DecoderFamily::GptNeox},
                                                         {"falcon", DecoderFamily::Falcon},
                                                         {"llama4", DecoderFamily::Llama4},
                                                         {"llama4_text", DecoderFamily::Llama4}};
  return f;
}

// transformers' architecture class names, for a config that names only `architectures`.
const std::map<std::string, std::string>& architectureTypes() {
  static const std::map<std::string, std::string> a = {{"LlamaForCausalLM", "llama"},
                                                       {"MistralForCausalLM", "mistral"},
                                                       {"Qwen2ForCausalLM", "qwen2"},
                                                       {"Qwen3ForCausalLM", "qwen3"},
                                                       {"MixtralForCausalLM", "mixtral"},
                                                       {"Qwen2MoeForCausalLM", "qwen2_moe"},
                                                       {"Qwen3MoeForCausalLM", "qwen3_moe"},
                                                       {"DeepseekV2ForCausalLM", "deepseek_v2"},
                                                       {"DeepseekV3ForCausalLM", "deepseek_v3"},
                                                       {"GptOssForCausalLM", "gpt_oss"},
                                                       {"Phi3ForCausalLM", "phi3"},
                                                       {"GraniteForCausalLM", "granite"},
                                                       {"OlmoeForCausalLM", "olmoe"},
                                                       {"Gemma2ForCausalLM", "gemma2"},
                                                       {"Gemma3ForCausalLM", "gemma3_text"},
                                                       {"Starcoder2ForCausalLM", "starcoder2"},
                                                       {"GPTNeoXForCausalLM", "gpt_neox"},
                                                       {"FalconForCausalLM", "falcon"},
                                                       {"Llama4ForConditionalGeneration", "llama4"},
                                                       {"Llama4ForCausalLM", "llama4_text"}};
  return a;
}

// Families irc knows of but does not build yet: said as such, not as unknown.
const std::map<std::string, std::string>& notBuilt() {
  static const std::map<std::string, std::string> n = {
      {"qwen3_next", "Qwen3-Next's linear attention layers"},
      {"gemma3", "Gemma 3's vision tower; its text decoder alone is model_type gemma3_text"},
  };
  return n;
}

// Every weight (or one token's, `active`), as a double: defined with the public counts below.
double countParameters(const DecoderConfig& c, bool active);

constexpr int64_t kMaxConfigSize = int64_t{1} << 20;
// Layers, experts and heads: published models have at most a few hundred of each.
constexpr int64_t kMaxConfigCount = 4096;
constexpr int64_t kMaxPositions = int64_t{1} << 30;

class ConfigReader {
 public:
  ConfigReader(const YamlNode& root, DiagnosticEngine& diags) : root_(root), reader_(diags) {}

  // A size key: 1 .. kMaxConfigSize (published models' largest sizes are 2^18 vocabulary
  // entries; the bound keeps every count the model is built from far inside int64).
  std::optional<int64_t> positive(const char* key, std::optional<int64_t> fallback = std::nullopt,
                                  int64_t most = kMaxConfigSize) {
    YamlNode n = root_.find(key);
    if (!n.IsDefined() || n.IsNull()) {
      if (!fallback)
        reader_.diags().error(locOf(root_), fmt::format("the config has no '{}', which the model's shape needs", key));
      return fallback;
    }
    if (!isJsonValue(n, key)) return std::nullopt;
    auto v = reader_.integer(n, key);
    if (v && (*v < 1 || *v > most)) {
      reader_.error(n, fmt::format("{} must be in 1 .. {}; got {}", key, most, *v));
      return std::nullopt;
    }
    return v;
  }
  bool flag(const char* key, bool fallback) {
    YamlNode n = root_.find(key);
    if (!n.IsDefined() || n.IsNull() || !isJsonValue(n, key, "true or false")) return fallback;
    return reader_.boolean(n, key).value_or(fallback);
  }
  double number(const char* key, double fallback) {
    YamlNode n = root_.find(key);
    if (!n.IsDefined() || n.IsNull() || !isJsonValue(n, key)) return fallback;
    return reader_.number(n, key).value_or(fallback);
  }
  // The first of `keys` the config has (transformers 4's and 5's spellings of one attribute).
  const char* spelled(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (YamlNode n = root_.find(k); n.IsDefined() && !n.IsNull()) return k;
    return *keys.begin();
  }
  // A JSON number or boolean is written bare: `"256"` and `"false"` are strings, which
  // transformers' typed config classes reject.
  bool isJsonValue(const YamlNode& n, const char* key, const char* expected = "a number") {
    if (!n.IsScalar() || !n.IsQuoted()) return true;
    reader_.error(n, fmt::format("{} must be {}; got the string \"{}\"", key, expected, n.Scalar()));
    return false;
  }
  std::optional<std::string> modelType() {
    YamlNode t = root_.find("model_type");
    if (t.IsDefined() && !t.IsNull()) {
      auto s = reader_.string(t, "model_type");
      if (s && !families().count(*s)) rejectFamily(t, *s);
      return s && families().count(*s) ? s : std::nullopt;
    }
    YamlNode a = root_.find("architectures");
    if (a.IsSequence() && a.size() > 0 && a[0].IsScalar()) {
      auto it = architectureTypes().find(a[0].Scalar());
      if (it != architectureTypes().end()) return it->second;
      reader_.error(a[0], fmt::format("architecture '{}' is not one irc builds; supported: {}", a[0].Scalar(),
                                      joinNames(supportedModelTypes())));
      return std::nullopt;
    }
    reader_.diags().error(locOf(root_), fmt::format("the config names no model_type (nor architectures); supported: {}",
                                                    joinNames(supportedModelTypes())));
    return std::nullopt;
  }
  void rejectFamily(const YamlNode& at, const std::string& type) {
    auto nb = notBuilt().find(type);
    if (nb != notBuilt().end())
      reader_.error(at, fmt::format("model_type '{}' is not built yet ({}); supported: {}", type, nb->second,
                                    joinNames(supportedModelTypes())));
    else
      reader_.error(
          at, fmt::format("model_type '{}' is not a family irc builds; supported: {}", type, joinNames(supportedModelTypes())));
  }
  // How the published checkpoint stores its weights (DeepSeek-V3's fp8 blocks, GPT-OSS's mxfp4
  // experts): what a user downloads, so read, and said once; the model planned is the unquantized
  // one (docs/config-json.md).
  std::optional<StoredQuantization> quantization() {
    YamlNode q = root_.find("quantization_config");
    if (!q.IsDefined() || q.IsNull()) return std::nullopt;
    if (!q.IsMap()) {
      reader_.error(q, "quantization_config must be an object (transformers' QuantizationConfigMixin.to_dict)");
      return std::nullopt;
    }
    StoredQuantization s;
    s.line = q.Mark().line + 1, s.column = q.Mark().column + 1;
    YamlNode method = q.find("quant_method");
    s.method = method.IsScalar() ? method.Scalar() : "unnamed";
    auto text = [&](const char* key) {
      YamlNode n = q.find(key);
      return n.IsScalar() ? n.Scalar() : std::string();
    };
    if (s.method == "fp8") {
      YamlNode block = q.find("weight_block_size");
      std::string format = text("fmt");
      s.format = "fp8" + (format.empty() ? std::string() : " " + format);
      if (block.IsSequence() && block.size() == 2 && block[0].IsScalar() && block[1].IsScalar())
        s.format += fmt::format(" in {} x {} blocks, a float32 scale each", block[0].Scalar(), block[1].Scalar());
    } else if (s.method == "mxfp4") {
      s.format = "mxfp4 (4-bit e2m1 in blocks of 32, an e8m0 scale each)";
    } else if (s.method == "bitsandbytes") {
      s.format = text("load_in_4bit") == "true" ? "bitsandbytes 4-bit" : "bitsandbytes 8-bit";
    } else {
      std::string bits = text("bits");
      s.format = s.method + (bits.empty() ? std::string() : " " + bits + "-bit");
    }
    return s;
  }
  YamlReader& reader() { return reader_; }
  const YamlNode& root() const { return root_; }

 private:
  YamlNode root_;
  YamlReader reader_;
};

bool isDeepseek(DecoderFamily f) { return f == DecoderFamily::DeepseekV2 || f == DecoderFamily::DeepseekV3; }

bool isMoe(DecoderFamily f) {
  return f == DecoderFamily::Mixtral || f == DecoderFamily::Qwen2Moe || f == DecoderFamily::Qwen3Moe || isDeepseek(f) ||
         f == DecoderFamily::GptOss || f == DecoderFamily::Olmoe;
}

// Gemma's layers (Gemma2Config, Gemma3TextConfig): norms as offsets from 1, four a layer, GeGLU,
// the embedding scaled by √h, the scores by query_pre_attn_scalar^-½, softcaps where given (Gemma
// 2's 50 and 30 by default, Gemma 3's none), a tied head; Gemma 3 norms each head's q and k.
void readGemma(ConfigReader& r, DecoderConfig& c) {
  const bool gemma2 = c.family == DecoderFamily::Gemma2;
  c.normOffset = c.sandwichNorms = c.gatedGelu = true;
  c.qkNorm = !gemma2;
  c.attentionBias = c.outputBias = r.flag("attention_bias", false);
  c.embeddingScale = std::sqrt(static_cast<double>(c.hidden));
  double scalar = r.number("query_pre_attn_scalar", 256);
  if (scalar <= 0) r.reader().error(r.root().find("query_pre_attn_scalar"), "query_pre_attn_scalar must be positive");
  else c.scoreScale = 1 / std::sqrt(scalar);
  c.attentionSoftcap = r.number("attn_logit_softcapping", gemma2 ? 50.0 : 0.0);
  c.logitSoftcap = r.number("final_logit_softcapping", gemma2 ? 30.0 : 0.0);
}

// A GeLU MLP's activation `key` (transformers' ACT2FN names): "gelu" (the default) the exact
// GeLU; "gelu_new", "gelu_fast", "gelu_pytorch_tanh" the tanh form.
bool isExactGelu(ConfigReader& r, const char* key) {
  YamlNode act = r.root().find(key);
  if (!act.IsDefined()) return true;
  return r.reader().choice(act, key, {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh"}).value_or("gelu") == "gelu";
}

// GPT-NeoX's layers (GPTNeoXConfig's defaults): LayerNorms, biases on q/k/v and the output
// (attention_bias: true) and on the MLP's two linear layers (always), rotary embedding on
// rotary_pct (0.25) of each head's dims, the parallel residual (use_parallel_residual: true),
// the MLP's hidden_act ("gelu": exact; "gelu_new", "gelu_fast", "gelu_pytorch_tanh": the tanh
// form), an untied embed_out.
void readGptNeox(ConfigReader& r, DecoderConfig& c) {
  c.neox = c.layerNorm = c.plainMlp = c.mlpBias = true;
  c.attentionBias = c.outputBias = r.flag("attention_bias", true);
  c.parallelResidual = r.flag("use_parallel_residual", true);
  const double pct = r.number("rotary_pct", 0.25);
  if (!(pct > 0 && pct <= 1))
    r.reader().error(r.root().find("rotary_pct"), fmt::format("rotary_pct must be in (0, 1]; got {}", pct));
  else c.rotaryHeadDim = static_cast<int64_t>(static_cast<double>(c.headDim) * pct);  // int(head_size * rotary_pct)
  c.exactGelu = isExactGelu(r, "hidden_act");
}

// Falcon's layers (FalconConfig's defaults, FalconDecoderLayer, FalconAttention): LayerNorms,
// every linear layer's bias by `bias` (false), the MLP's `activation` ("gelu": exact), a tied head
// (PretrainedConfig's default). The fused query_key_value's groups: new_decoder_architecture's
// num_kv_heads, multi_query's one (true by default), else each head its own [q; k; v]. The
// attention and the MLP both read the layer's input with parallel_attn (true) — through one
// LayerNorm, or with the new architecture's num_ln_in_parallel_attn 2 (its default) ln_attn and
// ln_mlp — else Llama's sequential layer. ALiBi (alibi: false) in place of rotary embedding.
void readFalcon(ConfigReader& r, DecoderConfig& c) {
  c.falcon = c.layerNorm = c.plainMlp = true;
  c.attentionBias = c.outputBias = c.mlpBias = r.flag("bias", false);
  c.alibi = r.flag("alibi", false);
  const bool newArchitecture = r.flag("new_decoder_architecture", false), parallel = r.flag("parallel_attn", true);
  if (newArchitecture && !parallel)
    r.reader().error(r.root().find("parallel_attn"),
                     "new_decoder_architecture builds its layers with parallel_attn: true only (FalconDecoderLayer)");
  int64_t parallelNorms = newArchitecture ? r.positive("num_ln_in_parallel_attn", 2).value_or(2) : 1;
  if (parallelNorms > 2)
    r.reader().error(r.root().find("num_ln_in_parallel_attn"),
                     fmt::format("num_ln_in_parallel_attn must be 1 or 2; got {}", parallelNorms));
  c.parallelResidual = parallel;
  c.sharedNorm = parallel && parallelNorms == 1;
  c.exactGelu = isExactGelu(r, "activation");
}

// Falcon's key-value groups: num_kv_heads (n_head_kv, FalconConfig's attribute_map) with the new
// architecture, one with multi_query, else every head (FalconAttention.num_kv_heads).
int64_t falconKeyValueHeads(ConfigReader& r, int64_t heads) {
  if (r.flag("new_decoder_architecture", false))
    return r.positive(r.spelled({"num_kv_heads", "n_head_kv"}), heads).value_or(heads);
  return r.flag("multi_query", true) ? 1 : heads;
}

// Llama 4's text decoder (Llama4TextConfig's defaults, Llama4TextDecoderLayer, Llama4TextMoe):
// MoE layers (moe_layers, else every interleave_moe_layer_step-th from step - 1) of
// num_local_experts (16) experts of intermediate_size, a shared expert as wide, the router's top
// num_experts_per_tok (1) logits' sigmoids scaling the chosen expert's input; dense layers of
// intermediate_size_mlp (16384); rotary on the layers no_rope_layers marks 1 (by default all but
// every no_rope_layer_interval-th, 4), their attention chunked in attention_chunk_size (8192)
// tokens unless layer_types says otherwise, their queries and keys L2-normed (use_qk_norm); the
// NoPE layers global, their queries scaled by position (attn_temperature_tuning).
void readLlama4(ConfigReader& r, DecoderConfig& c) {
  c.llama4 = true;
  c.attentionBias = c.outputBias = r.flag("attention_bias", false);
  c.expertFfn = c.sharedExpertFfn = c.intermediate;
  c.sharedExpertCount = 1;
  c.intermediate = r.positive("intermediate_size_mlp", 16384).value_or(16384);
  c.experts = r.positive("num_local_experts", 16).value_or(16);
  c.expertsPerToken = r.positive("num_experts_per_tok", 1).value_or(1);
  c.routing = Routing::TopKSigmoidInput;
  c.normTopK = false;
  if (c.experts > kMaxConfigCount)
    r.reader().error(r.root().find("num_local_experts"),
                     fmt::format("num_local_experts must be in 1 .. {}; got {}", kMaxConfigCount, c.experts));
  // (Each expert's input is scaled by its score: irc's dispatch carries one copy of a token.)
  if (c.expertsPerToken != 1)
    r.reader().error(r.root().find("num_experts_per_tok"),
                     fmt::format("num_experts_per_tok {}: irc builds Llama 4's input-scaled routing for one expert a token "
                                 "(Scout's and Maverick's)",
                                 c.expertsPerToken));
  auto perLayer = [&](const char* key, std::vector<bool>& into, auto&& fromValue) {
    YamlNode n = r.root().find(key);
    if (!n.IsDefined() || n.IsNull() || (n.IsSequence() && n.size() == 0)) return false;
    if (!n.IsSequence() || static_cast<int64_t>(n.size()) < c.layers) {
      r.reader().error(n, fmt::format("{} must list each of the {} layers", key, c.layers));
      return true;
    }
    for (int64_t l = 0; l < c.layers; ++l) into[l] = fromValue(n[l]);
    return true;
  };
  c.sparseLayer.assign(static_cast<size_t>(c.layers), false);
  YamlNode moeLayers = r.root().find("moe_layers");
  if (moeLayers.IsDefined() && !moeLayers.IsNull()) {
    for (int64_t l : r.reader().intList(moeLayers, "moe_layers").value_or(std::vector<int64_t>{})) {
      if (l < 0 || l >= c.layers)
        r.reader().error(moeLayers, fmt::format("moe_layers names layer {}; the model has layers 0 .. {}", l, c.layers - 1));
      else c.sparseLayer[l] = true;
    }
  } else {
    const int64_t step = r.positive("interleave_moe_layer_step", 1).value_or(1);
    for (int64_t l = step - 1; l < c.layers; l += step) c.sparseLayer[l] = true;
  }
  c.ropeLayer.assign(static_cast<size_t>(c.layers), true);
  const bool listed = perLayer("no_rope_layers", c.ropeLayer, [&](const YamlNode& v) {
    auto one = r.reader().integer(v, "no_rope_layers");
    if (one && *one != 0 && *one != 1)
      r.reader().error(v, fmt::format("no_rope_layers holds 1 (rotary) or 0 (NoPE); got {}", *one));
    return one.value_or(1) == 1;
  });
  if (!listed) {
    const int64_t interval = r.positive("no_rope_layer_interval", 4).value_or(4);
    for (int64_t l = 0; l < c.layers; ++l) c.ropeLayer[l] = (l + 1) % interval != 0;
  }
  c.chunkedLayer = c.ropeLayer;
  perLayer("layer_types", c.chunkedLayer, [&](const YamlNode& v) {
    return r.reader().choice(v, "layer_types", {"chunked_attention", "full_attention"}).value_or("") == "chunked_attention";
  });
  YamlNode chunk = r.root().find("attention_chunk_size");
  c.attentionChunk = chunk.IsDefined() && chunk.IsNull() ? 0 : r.positive("attention_chunk_size", 8192).value_or(0);
  c.l2QkNorm = r.flag("use_qk_norm", true);
  // (Scout's config.json writes attn_temperature_tuning as 4; Python reads any non-zero number as true.)
  YamlNode tuning = r.root().find("attn_temperature_tuning");
  if (tuning.IsScalar() && !tuning.IsQuoted() && tuning.Scalar() != "true" && tuning.Scalar() != "false")
    c.temperatureTuning = r.number("attn_temperature_tuning", 1) != 0;
  else c.temperatureTuning = r.flag("attn_temperature_tuning", true);
  c.floorScale = r.positive("floor_scale", 8192).value_or(8192);
  c.attentionScale = r.number("attn_scale", 0.1);
}

// Granite's multipliers (GraniteConfig: all 1 by default).
void readGranite(ConfigReader& r, DecoderConfig& c) {
  c.attentionBias = c.outputBias = r.flag("attention_bias", false);
  c.mlpBias = r.flag("mlp_bias", false);
  c.embeddingScale = r.number("embedding_multiplier", 1.0);
  c.residualScale = r.number("residual_multiplier", 1.0);
  c.scoreScale = r.number("attention_multiplier", 1.0);
  c.logitDivisor = r.number("logits_scaling", 1.0);
  if (c.logitDivisor == 0) r.reader().error(r.root().find("logits_scaling"), "logits_scaling divides the logits: not 0");
}

// Sliding-window attention: which layers, over how many tokens, as each family's config class
// derives them when `layer_types` is not written: Mistral's and Mixtral's (and Phi-3's) every
// layer; Qwen2's and Qwen3's only with use_sliding_window, from max_window_layers on
// (Qwen2Config); Qwen2-MoE's every other layer below max_window_layers (Qwen2MoeConfig); Gemma 2's
// every other layer, Gemma 3's five of each six (Gemma2Config, Gemma3TextConfig), GPT-OSS's every
// other (GptOssConfig).
void readSlidingWindows(ConfigReader& r, DecoderConfig& c) {
  c.slidingLayer.assign(static_cast<size_t>(c.layers), false);
  const DecoderFamily f = c.family;
  // Windowed by default, local and global layers alternating (GptOssConfig: every other layer of 128).
  const bool gemma = f == DecoderFamily::Gemma2 || f == DecoderFamily::Gemma3Text || f == DecoderFamily::GptOss;
  const bool qwen =
      f == DecoderFamily::Qwen2 || f == DecoderFamily::Qwen3 || f == DecoderFamily::Qwen2Moe || f == DecoderFamily::Qwen3Moe;
  if (f == DecoderFamily::Llama || f == DecoderFamily::Granite || f == DecoderFamily::Olmoe || f == DecoderFamily::DeepseekV2 ||
      f == DecoderFamily::DeepseekV3 || f == DecoderFamily::Falcon || f == DecoderFamily::Llama4)
    return;  // their attention has no window
  if (qwen && !r.flag("use_sliding_window", false)) return;
  YamlNode window = r.root().find("sliding_window");
  if (!gemma && (!window.IsDefined() || window.IsNull())) return;
  // Gemma2Config's and Gemma3TextConfig's default; GptOssConfig's.
  auto w = r.positive("sliding_window", f == DecoderFamily::GptOss ? 128 : 4096);
  if (!w) return;
  c.slidingWindow = *w;
  YamlNode types = r.root().find("layer_types");
  if (!types.IsSequence()) {
    const int64_t maxWindowLayers = qwen ? r.positive("max_window_layers", 28).value_or(28) : 0;
    const int64_t pattern = f == DecoderFamily::Gemma3Text ? r.positive("sliding_window_pattern", 6).value_or(6) : 2;
    for (int64_t l = 0; l < c.layers; ++l)
      c.slidingLayer[l] = gemma                                                    ? (l + 1) % pattern != 0
                          : f == DecoderFamily::Qwen2Moe                           ? (l + 1) % 2 != 0 && l < maxWindowLayers
                          : f == DecoderFamily::Qwen2 || f == DecoderFamily::Qwen3 ? l >= maxWindowLayers
                                                                                   : true;
    return;
  }
  if (static_cast<int64_t>(types.size()) != c.layers) {
    r.reader().error(types, fmt::format("layer_types lists {} layers; the model has {}", types.size(), c.layers));
    return;
  }
  for (int64_t l = 0; l < c.layers; ++l)
    if (auto t = r.reader().choice(types[l], "layer_types", {"sliding_attention", "full_attention"}))
      c.slidingLayer[l] = *t == "sliding_attention";
}

// DeepSeek's multi-head latent attention and its routing: V3's sigmoid scores over groups scored
// by their two best experts; V2's softmax scores, `greedy` (the top k of all) or
// `group_limited_greedy` (the topk_group groups holding the best experts, then the top k of those:
// its device-limited routing).
void readDeepseek(ConfigReader& r, DecoderConfig& c) {
  YamlNode q = r.root().find("q_lora_rank");
  c.qLora = q.IsDefined() && !q.IsNull() ? r.positive("q_lora_rank").value_or(0) : 0;
  c.kvLora = r.positive("kv_lora_rank").value_or(0);
  c.qkNope = r.positive("qk_nope_head_dim").value_or(0);
  c.qkRope = r.positive("qk_rope_head_dim").value_or(0);
  c.vHead = r.positive("v_head_dim").value_or(0);
  c.headDim = c.qkNope + c.qkRope;
  c.routing = Routing::SigmoidGroupLimited;
  c.groups = r.positive("n_group", 1).value_or(1);
  c.groupsKept = r.positive("topk_group", 1).value_or(1);
  if (c.family == DecoderFamily::DeepseekV2) {
    std::string method = "greedy";
    if (YamlNode m = r.root().find("topk_method"); m.IsDefined() && !m.IsNull())
      method = r.reader().choice(m, "topk_method", {"greedy", "group_limited_greedy"}).value_or(method);
    c.routing = method == "greedy" ? Routing::SoftmaxTopK : Routing::SoftmaxGroupLimited;
    if (method == "greedy") c.groups = c.groupsKept = 1;
  }
  c.routedScaling = r.number("routed_scaling_factor", 1.0);
  c.sharedExpertCount = r.positive("n_shared_experts", 0).value_or(0);
}

void readExperts(ConfigReader& r, DecoderConfig& c) {
  const bool mixtral = c.family == DecoderFamily::Mixtral, deepseek = isDeepseek(c.family),
             gptOss = c.family == DecoderFamily::GptOss, olmoe = c.family == DecoderFamily::Olmoe;
  const bool qwen2 = c.family == DecoderFamily::Qwen2Moe, qwen3 = c.family == DecoderFamily::Qwen3Moe;
  // Qwen's MoE experts: transformers 4's `num_experts`, 5's `num_local_experts` (one attribute).
  const char* expertsKey = mixtral || gptOss ? "num_local_experts"
                           : deepseek        ? "n_routed_experts"
                                             : r.spelled({"num_experts", "num_local_experts"});
  // The config classes' defaults: MixtralConfig 8 experts, top 2; Qwen2MoeConfig 60, top 4, FFN
  // 1408; Qwen3MoeConfig 128, top 8, FFN 768; OlmoeConfig 64, top 8 (DeepSeek's are required).
  auto orDefault = [&](int64_t v) { return deepseek || gptOss ? std::nullopt : std::optional<int64_t>(v); };
  auto experts = r.positive(expertsKey, orDefault(mixtral ? 8 : qwen2 ? 60 : qwen3 ? 128 : 64));
  auto perToken = r.positive("num_experts_per_tok", orDefault(mixtral ? 2 : qwen2 ? 4 : 8));
  auto ffn = mixtral || gptOss || olmoe ? std::optional<int64_t>(c.intermediate)
                                        : r.positive("moe_intermediate_size", orDefault(qwen2 ? 1408 : 768));
  if (!experts || !perToken || !ffn) return;
  c.experts = *experts;
  c.expertsPerToken = *perToken;
  c.expertFfn = *ffn;
  if (c.experts > kMaxConfigCount)
    r.reader().error(r.root().find(expertsKey),
                     fmt::format("{} must be in 1 .. {}; got {}", expertsKey, kMaxConfigCount, c.experts));
  if (c.expertsPerToken > c.experts)
    r.reader().error(r.root().find("num_experts_per_tok"),
                     fmt::format("num_experts_per_tok {} is more than the {} experts", c.expertsPerToken, c.experts));
  // Mixtral renormalises the top-k softmax weights; Qwen's MoE and DeepSeek with norm_topk_prob;
  // GPT-OSS's softmax runs over the chosen logits alone.
  // (transformers' defaults: V3 normalises, V2 does not).
  c.normTopK = mixtral || r.flag("norm_topk_prob", c.family == DecoderFamily::DeepseekV3);
  c.sparseLayer.assign(static_cast<size_t>(c.layers), true);
  if (c.family == DecoderFamily::Qwen2Moe) {
    c.sharedExpertFfn = r.positive("shared_expert_intermediate_size", 5632).value_or(0);  // Qwen2MoeConfig's default
    c.sharedExpertCount = c.sharedExpertFfn > 0 ? 1 : 0;
    c.sharedExpertGate = c.sharedExpertFfn > 0;
  }
  if (deepseek) {
    readDeepseek(r, c);
    c.sharedExpertFfn = c.sharedExpertCount * c.expertFfn;
    if (c.groups < 1 || c.experts % c.groups != 0 || c.groupsKept > c.groups)
      r.reader().error(r.root().find("n_group"), fmt::format("n_group {} must divide the {} experts and hold topk_group {}",
                                                             c.groups, c.experts, c.groupsKept));
    // The first first_k_dense_replace layers are dense (the rest every moe_layer_freq-th).
    int64_t dense = r.positive("first_k_dense_replace", 0).value_or(0);
    int64_t freq = r.positive("moe_layer_freq", 1).value_or(1);
    for (int64_t l = 0; l < c.layers; ++l) c.sparseLayer[l] = l >= dense && l % freq == 0;
    return;
  }
  if (gptOss) {
    c.routing = Routing::TopKSoftmax;
    c.normTopK = false;
    c.routerBias = c.expertBias = true;
    c.swigluLimit = r.number("swiglu_limit", 7.0);
    return;
  }
  if (mixtral || olmoe) return;
  // Qwen's MoE layers: every decoder_sparse_step-th (1-based), except mlp_only_layers.
  int64_t step = r.positive("decoder_sparse_step", 1).value_or(1);
  for (int64_t l = 0; l < c.layers; ++l) c.sparseLayer[l] = (l + 1) % step == 0;
  if (YamlNode only = r.root().find("mlp_only_layers"); only.IsDefined() && !only.IsNull())
    if (auto list = r.reader().intList(only, "mlp_only_layers"))
      for (int64_t l : *list) {
        if (l < 0 || l >= c.layers) {
          r.reader().error(only, fmt::format("mlp_only_layers names layer {}; the model has layers 0 .. {}", l, c.layers - 1));
          continue;
        }
        c.sparseLayer[l] = false;
      }
}

}  // namespace

const std::vector<std::string>& supportedModelTypes() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const auto& [name, family] : families()) t.push_back(name);
    return t;
  }();
  return types;
}

namespace {

// A config.json is JSON as Python's json module writes it: a real JSON parser first (yaml-cpp
// alone takes trailing commas, single quotes, +256, 0256 and stray bytes, and loses the member
// after them), and no key twice (Python and transformers keep the last, yaml-cpp the first).
bool isStrictJson(const std::string& text, DiagnosticEngine& diags) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);  // thrown on invalid JSON; the tree is not used
    (void)parsed;
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    if (size_t at = what.find("syntax error"); at != std::string::npos) what = what.substr(at);
    diags.error(locOfParseError(text, e), fmt::format("invalid JSON: {}", what));
    return false;
  }
  return true;
}

// The config's one JSON object, strict (isStrictJson), with every key once; read with yaml-cpp
// (JSON is YAML's flow style) for the marks the diagnostics are located at. nullptr: rejected.
std::unique_ptr<YamlDocuments> configDocument(const std::string& text, DiagnosticEngine& diags) {
  if (!isStrictJson(text, diags)) return nullptr;
  std::unique_ptr<YamlDocuments> doc;
  try {
    doc = std::make_unique<YamlDocuments>(text);  // JSON is YAML's flow style: one parser, located marks
  } catch (const YamlRunaway& e) {
    diags.error({std::max(e.mark.line, 0) + 1, std::max(e.mark.column, 0) + 1},
                "invalid JSON: the parser makes no progress here");
    return nullptr;
  } catch (const YAML::Exception& e) {
    diags.error({e.mark.line + 1, e.mark.column + 1}, fmt::format("invalid JSON: {}", e.msg));
    return nullptr;
  }
  if (doc->size() != 1 || !doc->root(0).IsMap()) {
    diags.error({1, 1}, "a config.json holds one JSON object (Hugging Face's PretrainedConfig.to_json_file)");
    return nullptr;
  }
  if (auto twice = doc->firstDuplicateKey()) {
    diags.error({twice->again.line + 1, twice->again.column + 1},
                fmt::format("'{}' is given twice (first at {}:{}); JSON readers disagree on which counts (Python's "
                            "json and transformers take the last): keep one",
                            twice->key, twice->first.line + 1, twice->first.column + 1));
    return nullptr;
  }
  return doc;
}

// The sizes every family has (the hidden width, layers, heads, vocabulary, MLP width, key-value
// heads, head width, positions, the norm's epsilon, a tied head) and their consistency; false
// when one is missing.
bool readSizes(ConfigReader& r, DecoderConfig& c) {
  // (FalconConfig's attribute_map: n_layer and n_head; its MLP ffn_hidden_size, 4 h by default.)
  const bool falcon = c.family == DecoderFamily::Falcon;
  const char* layersKey = falcon ? r.spelled({"num_hidden_layers", "n_layer"}) : "num_hidden_layers";
  const char* headsKey = falcon ? r.spelled({"num_attention_heads", "n_head"}) : "num_attention_heads";
  auto hidden = r.positive("hidden_size"), layers = r.positive(layersKey), heads = r.positive(headsKey);
  auto vocab = r.positive("vocab_size");
  if (!hidden || !layers || !heads || !vocab) return false;
  auto intermediate = falcon ? r.positive("ffn_hidden_size", 4 * *hidden) : r.positive("intermediate_size");
  if (!intermediate) return false;
  c.hidden = *hidden;
  c.layers = *layers;
  c.heads = *heads;
  c.vocab = *vocab;
  c.intermediate = *intermediate;
  c.kvHeads = falcon ? falconKeyValueHeads(r, c.heads) : r.positive("num_key_value_heads", c.heads).value_or(c.heads);
  const bool gemma = c.family == DecoderFamily::Gemma2 || c.family == DecoderFamily::Gemma3Text;
  // (Gemma2Config's and Gemma3TextConfig's head_dim is 256 whatever the width.)
  c.headDim = r.positive("head_dim", gemma ? 256 : std::max<int64_t>(1, c.hidden / c.heads)).value_or(1);
  for (auto [key, value] : {std::pair{layersKey, c.layers}, {headsKey, c.heads}})
    if (value > kMaxConfigCount)
      r.reader().error(r.root().find(key), fmt::format("{} must be in 1 .. {}; got {}", key, kMaxConfigCount, value));
  const bool llama4 = c.family == DecoderFamily::Llama4;
  const int64_t positions = falcon ? 2048 : llama4 ? 131072 : 4096;  // FalconConfig's, Llama4TextConfig's defaults
  // (Llama 4 Scout's context is 10,485,760 tokens; the positions bound only the default sequence.)
  c.maxPositions = r.positive("max_position_embeddings", positions, kMaxPositions).value_or(positions);
  c.rmsEps = c.family == DecoderFamily::Starcoder2 ? r.number("norm_epsilon", 1e-5)        // Starcoder2Config's LayerNorm eps
             : c.family == DecoderFamily::GptNeox  ? r.number("layer_norm_eps", 1e-5)      // GPTNeoXConfig's
             : falcon                              ? r.number("layer_norm_epsilon", 1e-5)  // FalconConfig's
                      : r.number("rms_norm_eps", c.family == DecoderFamily::Olmoe || llama4 ? 1e-5 : 1e-6);
  // Gemma ties its head by default (Gemma2Config, Gemma3TextConfig); the others do not.
  // (Starcoder2Config too; FalconConfig keeps PretrainedConfig's true.)
  c.tiedEmbeddings = r.flag("tie_word_embeddings", gemma || c.family == DecoderFamily::Starcoder2 || falcon);
  if (c.heads % c.kvHeads != 0)
    r.reader().error(r.root().find(falcon ? "num_kv_heads" : "num_key_value_heads"),
                     fmt::format("num_attention_heads {} is not a multiple of {} {}", c.heads,
                                 falcon ? "num_kv_heads" : "num_key_value_heads", c.kvHeads));
  if (!r.root().find("head_dim").IsDefined() && !isDeepseek(c.family) && !gemma && c.hidden % c.heads != 0)
    r.reader().error(r.root().find(headsKey),
                     fmt::format("hidden_size {} is not a multiple of num_attention_heads {} (and the config gives no head_dim)",
                                 c.hidden, c.heads));
  return true;
}

// What each family's layers hold beyond the common sizes: biases, norms, fused projections.
void readFamilyKeys(ConfigReader& r, DecoderConfig& c) {
  switch (c.family) {
    case DecoderFamily::Gemma2:
    case DecoderFamily::Gemma3Text: readGemma(r, c); break;
    case DecoderFamily::Granite: readGranite(r, c); break;
    case DecoderFamily::Starcoder2:  // use_bias: every linear layer's bias (Starcoder2Config: true)
      c.layerNorm = c.plainMlp = true;
      c.attentionBias = c.outputBias = c.mlpBias = r.flag("use_bias", true);
      break;
    case DecoderFamily::GptNeox: readGptNeox(r, c); break;
    case DecoderFamily::Falcon: readFalcon(r, c); break;
    case DecoderFamily::Llama4: readLlama4(r, c); break;
    case DecoderFamily::Olmoe:
      c.attentionBias = c.outputBias = r.flag("attention_bias", false);
      c.qkNormWide = true;
      break;
    case DecoderFamily::Phi3:  // no biases (Phi3Config); qkv_proj and gate_up_proj fused
    case DecoderFamily::Llama:
    case DecoderFamily::Mistral:
      c.attentionBias = c.outputBias = r.flag("attention_bias", false);
      c.mlpBias = r.flag("mlp_bias", false);
      break;
    case DecoderFamily::Qwen2:
    case DecoderFamily::Qwen2Moe: c.attentionBias = true; break;  // q, k, v biases; o_proj none
    case DecoderFamily::Qwen3:
    case DecoderFamily::Qwen3Moe:
      c.attentionBias = c.outputBias = r.flag("attention_bias", false);
      c.qkNorm = true;
      break;
    case DecoderFamily::Mixtral:
    case DecoderFamily::DeepseekV2:
    case DecoderFamily::DeepseekV3: break;
    case DecoderFamily::GptOss:
      c.attentionBias = c.outputBias = r.flag("attention_bias", true);
      c.sinks = true;
      break;
  }
}

}  // namespace

std::optional<DecoderConfig> readDecoderConfig(const std::string& text, DiagnosticEngine& diags) {
  std::unique_ptr<YamlDocuments> doc = configDocument(text, diags);
  if (!doc) return std::nullopt;
  ConfigReader top(doc->root(0), diags);
  auto type = top.modelType();
  if (!type) return std::nullopt;
  DecoderConfig c;
  c.modelType = *type;
  c.family = families().at(*type);
  c.quantization = top.quantization();
  // Llama 4 as published (Llama4Config, model_type llama4): the decoder's keys in text_config,
  // beside a vision tower irc does not build.
  std::optional<ConfigReader> textConfig;
  if (*type == "llama4") {
    YamlNode nested = top.root().find("text_config");
    if (nested.IsMap()) {
      textConfig.emplace(nested, diags);
      diags.warning(locOf(nested),
                    "llama4: irc plans the text decoder (Llama4ForCausalLM, text_config); the vision tower "
                    "and its projector (vision_config) are not built");
    }
  }
  ConfigReader& r = textConfig ? *textConfig : top;
  if (c.quantization)
    diags.warning({c.quantization->line, c.quantization->column},
                  fmt::format("quantization_config: the checkpoint stores its weights as {}; irc plans the model "
                              "unquantized, in the plan's precision (a training run trains it so; serving the stored "
                              "format is not planned)",
                              c.quantization->format));
  if (!readSizes(r, c)) return std::nullopt;
  readFamilyKeys(r, c);
  readSlidingWindows(r, c);
  if (isMoe(c.family)) readExperts(r, c);
  if (diags.hasErrors()) return std::nullopt;
  if (double n = countParameters(c, false); n > 9e15)
    diags.error(locOf(r.root()), fmt::format("the config describes {:.3g} parameters; irc plans models of up to 9e15", n));
  if (diags.hasErrors()) return std::nullopt;
  return c;
}

namespace {

// Counted in double: with sizes up to 2^20 and counts up to 4,096 a model can exceed int64 (it is
// then rejected), and every realistic count is exact below 2^53.
double swiglu(double h, double f, bool bias) { return 3 * h * f + (bias ? 2 * f + h : 0); }

double attentionParameters(const DecoderConfig& c) {
  if (c.kvLora > 0) {  // DeepSeek's latent attention
    double qHead = static_cast<double>(c.heads) * static_cast<double>(c.qkNope + c.qkRope);
    const double h = static_cast<double>(c.hidden), a = static_cast<double>(c.heads), q = static_cast<double>(c.qLora);
    const double kv = static_cast<double>(c.kvLora), rope = static_cast<double>(c.qkRope);
    double n = c.qLora > 0 ? h * q + q + q * qHead : h * qHead;
    n += h * (kv + rope) + kv + kv * a * static_cast<double>(c.qkNope + c.vHead);
    return n + a * static_cast<double>(c.vHead) * h;
  }
  double h = static_cast<double>(c.hidden), q = static_cast<double>(c.heads) * static_cast<double>(c.headDim);
  double kv = static_cast<double>(c.kvHeads) * static_cast<double>(c.headDim);
  double n = h * q + 2 * h * kv + q * h;
  if (c.attentionBias) n += q + 2 * kv;
  if (c.outputBias) n += c.hidden;
  if (c.qkNorm) n += 2 * c.headDim;
  if (c.qkNormWide) n += q + kv;
  if (c.sinks) n += c.heads;
  return n;
}

// One routed expert's weights (GPT-OSS's with their biases).
double expertParameters(const DecoderConfig& c) {
  return swiglu(static_cast<double>(c.hidden), static_cast<double>(c.expertFfn), c.expertBias);
}

// One layer's MLP weights: all of them, or one token's (`active`).
double mlpParameters(const DecoderConfig& c, int64_t layer, bool active) {
  const double h = static_cast<double>(c.hidden), e = static_cast<double>(c.experts);
  if (c.plainMlp) {  // c_fc [F, h] and c_proj [h, F], with their biases
    const double f = static_cast<double>(c.intermediate);
    return 2 * h * f + (c.mlpBias ? f + h : 0);
  }
  if (c.experts == 0 || !c.sparseLayer[layer]) return swiglu(h, static_cast<double>(c.intermediate), c.mlpBias);
  double n = e * h + (c.routerBias ? e : 0);  // the router
  n += static_cast<double>(active ? c.expertsPerToken : c.experts) * expertParameters(c);
  if (c.sharedExpertFfn > 0) n += swiglu(h, static_cast<double>(c.sharedExpertFfn), false);
  if (c.sharedExpertGate) n += h;
  return n;
}

double countParameters(const DecoderConfig& c, bool active) {
  const double h = static_cast<double>(c.hidden), v = static_cast<double>(c.vocab);
  // The final norm; the output head, all of it; the embedding, of which a token reads one row,
  // unless it is the head's own matrix (tied: counted once, so active never exceeds total).
  const double norm = (c.layerNorm ? 2 : 1) * h;  // a LayerNorm's weight and bias
  double n = norm + v * h;
  if (!c.tiedEmbeddings) n += (active ? 1 : v) * h;
  // Gemma's pre and post norms around each block; Falcon's one norm for both blocks.
  const double norms = (c.sandwichNorms ? 4 : c.sharedNorm ? 1 : 2) * norm;
  for (int64_t l = 0; l < c.layers; ++l) n += norms + attentionParameters(c) + mlpParameters(c, l, active);
  return n;
}

}  // namespace

int64_t parameterCount(const DecoderConfig& c) { return std::llround(countParameters(c, false)); }
int64_t activeParameterCount(const DecoderConfig& c) { return std::llround(countParameters(c, true)); }

}  // namespace irc
