#include "frontends/hf_config/decoder_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace irc {
namespace {

using Strategy = std::vector<std::vector<int64_t>>;

// Writes the model's lists; each op line names its module.
class DecoderWriter {
 public:
  DecoderWriter(const DecoderConfig& c, const DecoderShape& s, const ParallelDims* d, int64_t microBatches, int64_t deviceNum)
      : c_(c), s_(s), d_(d), microBatches_(microBatches), deviceNum_(deviceNum) {}

  std::string write(const std::string& name) {
    const int64_t T = tokens();
    input("input_ids", {s_.batch, s_.sequence}, "int32");
    // model.rotary_emb's tables for each sequence's positions, [batch, sequence, head_dim] as
    // transformers computes them from position_ids (not trained: inputs), unsqueezed over the heads;
    // ALiBi's biases [batch, heads, 1, keys] (build_alibi_tensor: each head's slope times the key's
    // position) instead.
    if (c_.rotary()) {
      input("position_cos", {s_.batch, s_.sequence, c_.rotaryDim()});
      input("position_sin", {s_.batch, s_.sequence, c_.rotaryDim()});
    } else {
      input("alibi", {s_.batch, c_.heads, 1, s_.sequence});
    }
    // Llama 4's NoPE layers scale each query by its position's log1p(floor((p + 1) / floor_scale))
    // · attn_scale + 1, a table of the positions like rotary's.
    if (temperatureScaled()) input("attention_scales", {s_.batch, 1, s_.sequence, 1});
    const std::string embedding = base() + (c_.neox ? ".embed_in" : c_.falcon ? ".word_embeddings" : ".embed_tokens");
    param(embedding + ".weight", {c_.vocab, c_.hidden});
    module_ = embedding;
    bool vocabSplit = d_ && d_->tp > 1;  // Megatron's vocabulary-parallel embedding (MindSpore: whole indices)
    op("embed", "Gather", {embedding + ".weight", "input_ids"}, "{axis: 0}",
       vocabSplit ? Strategy{{tp(), 1}, {1, 1}} : Strategy{{1, 1}, {dp(), cp()}});
    module_ = base() + ".rotary_emb";
    if (c_.rotary()) {
      op("rotary_cos", "Reshape", {"position_cos", shapeText({s_.batch, 1, s_.sequence, c_.rotaryDim()})});
      op("rotary_sin", "Reshape", {"position_sin", shapeText({s_.batch, 1, s_.sequence, c_.rotaryDim()})});
    }
    module_ = base();
    std::string x = op("embed_flat", "Reshape", {"embed", shapeText({T, c_.hidden})});
    // Gemma scales the embedding by √h, Granite by its embedding_multiplier.
    if (c_.embeddingScale != 1) x = op("embed_scaled", "Mul", {x, number(c_.embeddingScale)});
    for (int64_t l = 0; l < c_.layers; ++l) x = layer(l, x);
    x = gatheredForColumns("final_norm", norm("final_norm",
                                              base() + (c_.neox     ? ".final_layer_norm"
                                                        : c_.falcon ? ".ln_f"
                                                                    : ".norm"),
                                              x, c_.hidden));
    const std::string headModule = c_.neox ? "embed_out" : "lm_head";
    std::string head = c_.tiedEmbeddings ? embedding + ".weight" : headModule + ".weight";
    if (!c_.tiedEmbeddings) param(head, {c_.vocab, c_.hidden});
    module_ = headModule;
    std::string logits = op(finalLogits() ? "lm_head_raw" : "lm_head", "MatMul", {x, head}, "{transpose_b: true}",
                            Strategy{{dp() * cp(), 1}, {tp(), 1}});
    // Granite divides the logits by logits_scaling; Gemma 2 softcaps them.
    module_ = base();
    if (c_.logitDivisor != 1)
      logits = op(c_.logitSoftcap > 0 ? "logits_scaled" : "lm_head", "Mul", {logits, number(1 / c_.logitDivisor)});
    if (c_.logitSoftcap > 0) softcap("lm_head", logits, c_.logitSoftcap);

    std::string out = fmt::format("# {} ({}) from its config.json: one micro-batch of {} sequences of {} tokens\n", name,
                                  c_.modelType, s_.batch, s_.sequence);
    out += "name: " + name + "\n";
    out += parallelBlock();
    out += "inputs:\n" + inputs_ + "parameters:\n" + params_ + "ops:\n" + ops_ + "outputs: [lm_head]\n";
    out += stagesBlock();
    return out;
  }

 private:
  int64_t tokens() const { return s_.batch * s_.sequence; }
  // The decoder's module, as transformers names it: `model`, GPT-NeoX's `gpt_neox`, Falcon's
  // `transformer` (its layers `h`).
  std::string base() const { return c_.neox ? "gpt_neox" : c_.falcon ? "transformer" : "model"; }
  std::string layerModule(int64_t l) const { return fmt::format("{}.{}.{}", base(), c_.falcon ? "h" : "layers", l); }
  int64_t dp() const { return d_ ? d_->dp : 1; }
  int64_t tp() const { return d_ ? d_->tp : 1; }
  int64_t ep() const { return d_ ? d_->ep : 1; }
  int64_t cp() const { return d_ ? d_->cp : 1; }
  int64_t expertTensor() const { return d_ ? d_->etp : 1; }
  // The tokens [batch * sequence] split over the data ranks (the batch) and the context ranks (the
  // sequence), on the mesh [dp, cp, tp] Megatron and Llama 3 use.
  int64_t tokenSplit() const { return dp() * cp(); }
  // The MoE dispatch's groups (a chunk of a sequence each) over every rank of the DP x CP x TP grid.
  int64_t dispatchSplit() const { return tokenSplit() * tp(); }
  // The residual stream: with sequence parallelism split over DP, CP and TP by tokens (the norms
  // follow it; column products gather it over TP, row products reduce-scatter into it).
  std::optional<Strategy> residualStrategy() const {
    if (!d_ || !d_->sp) return std::nullopt;
    return Strategy{{tokenSplit() * tp(), 1}, {tokenSplit() * tp(), 1}};
  }

  static std::string shapeText(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }
  static std::string number(double v) { return fmt::format("{}", v); }
  bool finalLogits() const { return c_.logitDivisor != 1 || c_.logitSoftcap > 0; }
  bool temperatureScaled() const {
    return c_.temperatureTuning && std::find(c_.ropeLayer.begin(), c_.ropeLayer.end(), false) != c_.ropeLayer.end();
  }
  // Llama 4's L2 norm of each head's queries or keys (Llama4TextL2Norm: RMSNorm without a weight).
  std::string l2Norm(const std::string& n, const std::string& x) {
    std::string sq = op(n + ".square", "Mul", {x, x});
    std::string mean = op(n + ".mean", "ReduceMean", {sq, "-1"}, "{keep_dims: true}");
    std::string eps = op(n + ".eps", "Add", {mean, fmt::format("{}", c_.rmsEps)});
    std::string inv = op(n + ".rsqrt", "Pow", {eps, "-0.5"});
    return op(n, "Mul", {x, inv});
  }
  // cap · tanh(x / cap): Gemma 2's softcapping of the scores and the logits.
  std::string softcap(const std::string& n, const std::string& x, double cap) {
    std::string in = op(n + "_capped_in", "Mul", {x, number(1 / cap)});
    std::string t = op(n + "_tanh", "Tanh", {in});
    return op(n, "Mul", {t, number(cap)});
  }

  void input(const std::string& n, const std::vector<int64_t>& shape, const char* dtype = "float32") {
    inputs_ += fmt::format("  - {{name: {}, shape: {}, dtype: {}}}\n", n, shapeText(shape), dtype);
  }
  void param(const std::string& n, const std::vector<int64_t>& shape) {
    params_ += fmt::format("  - {{name: {}, shape: {}, dtype: float32}}\n", n, shapeText(shape));
  }
  // An op of the current module; its name prefixed by the layer's. Returns its name.
  std::string op(const std::string& n, const std::string& type, const std::vector<std::string>& inputs,
                 const std::string& attrs = "", const std::optional<Strategy>& strategy = std::nullopt,
                 const std::optional<Strategy>& outStrategy = std::nullopt) {
    std::string full = prefix_ + n;
    ops_ += fmt::format("  - {{name: {}, type: {}, inputs: [{}]", full, type, fmt::join(inputs, ", "));
    if (!attrs.empty()) ops_ += ", attrs: " + attrs;
    auto strategyText = [](const Strategy& strategy) {
      std::vector<std::string> dims;
      for (const auto& s : strategy) dims.push_back(shapeText(s));
      return fmt::format("[{}]", fmt::join(dims, ", "));
    };
    if (strategy && d_) ops_ += ", in_strategy: " + strategyText(*strategy);
    if (strategy && outStrategy && d_) ops_ += ", out_strategy: " + strategyText(*outStrategy);
    ops_ += ", module: " + module_ + "}\n";
    return full;
  }
  // torch's nn.Linear: x [tokens, in] times weight [out, in] (+ bias); `column` splits out over
  // the model-parallel group, else in (Megatron's column and row pairs).
  enum class Split { Column, Row, None };
  std::string linear(const std::string& n, const std::string& module, const std::string& x, int64_t in, int64_t out, Split split,
                     bool bias) {
    module_ = module;
    param(module + ".weight", {out, in});
    Strategy s = split == Split::Column ? Strategy{{tokenSplit(), 1}, {tp(), 1}}
                 : split == Split::Row  ? Strategy{{tokenSplit(), tp()}, {1, tp()}}
                                        : Strategy{{tokenSplit(), 1}, {1, 1}};
    // Under sequence parallelism a row product's partial sum is reduce-scattered over the tokens
    // straight into the residual stream's layout (Megatron's reduce_scatter_to_sequence_parallel_
    // region; MindFormers writes it as the projection's out_strategy ((dp * mp, 1),)), where an
    // AllReduce would give every rank the whole sum to keep a quarter of it.
    std::optional<Strategy> scattered;
    if (split == Split::Row && tp() > 1 && residualStrategy()) scattered = Strategy{{tokenSplit() * tp(), 1}};
    std::string y = op(n, "MatMul", {x, module + ".weight"}, "{transpose_b: true}", s, scattered);
    if (!bias) return y;
    param(module + ".bias", {out});
    return op(n + "_bias", "Add", {y, module + ".bias"});
  }
  // RMSNorm as transformers computes it: x / sqrt(mean(x^2) + eps) * weight, over the last dim
  // (Gemma's weight an offset from 1: times 1 + weight).
  // `stream`: a norm of the residual stream, which under sequence parallelism runs whole on each
  // rank's tokens (Megatron's and MindFormers' norms between the tensor-parallel regions).
  std::string rmsNorm(const std::string& n, const std::string& module, const std::string& x, int64_t dim, bool stream = false) {
    module_ = module;
    param(module + ".weight", {dim});
    std::string sq = op(n + ".square", "Mul", {x, x});
    std::string mean = op(n + ".mean", "ReduceMean", {sq, "-1"}, "{keep_dims: true}");
    std::string eps = op(n + ".eps", "Add", {mean, fmt::format("{}", c_.rmsEps)});
    std::string inv = op(n + ".rsqrt", "Pow", {eps, "-0.5"});
    std::string normed = op(n + ".normed", "Mul", {x, inv});
    std::string weight = module + ".weight";
    if (c_.normOffset) weight = op(n + ".scale", "Add", {weight, "1.0"});
    std::optional<Strategy> onTokens;
    if (stream && residualStrategy()) onTokens = Strategy{{tokenSplit() * tp(), 1}, {1}};
    return op(n, "Mul", {normed, weight}, "", onTokens);
  }
  // Under sequence parallelism the column products' input: the norm's tokens gathered over TP
  // once for every product that reads them (Megatron's gather before its fused QKV or fc1), a
  // view whose layout is its readers' (a Reshape to the same shape). Without it each of q, k and
  // v would gather its own copy.
  std::string gatheredForColumns(const std::string& n, const std::string& normed) {
    if (!residualStrategy() || tp() == 1) return normed;
    return op(n + ".gathered", "Reshape", {normed, shapeText({tokens(), c_.hidden})});
  }
  // A layer's (or the final) norm: RMSNorm, or StarCoder2's LayerNorm with its weight and bias.
  // (`stream` false: a norm of tokens every rank holds whole, the first layer's after the
  // embedding's AllReduce: split there it would be gathered again.)
  std::string norm(const std::string& n, const std::string& module, const std::string& x, int64_t dim, bool stream = true) {
    if (!c_.layerNorm) return rmsNorm(n, module, x, dim, stream);
    module_ = module;
    param(module + ".weight", {dim});
    param(module + ".bias", {dim});
    std::optional<Strategy> onTokens;
    if (stream && residualStrategy()) onTokens = Strategy{{tokenSplit() * tp(), 1}, {1}, {1}};
    return op(n, "LayerNorm", {x, module + ".weight", module + ".bias"}, fmt::format("{{epsilon: {}}}", c_.rmsEps), onTokens) +
           ":0";
  }
  // Rotary position embedding of [batch, heads, sequence, head_dim]: x cos + rotate_half(x) sin;
  // on the first rotaryDim of the head's dims only where that is fewer (GPT-NeoX's rotary_pct),
  // the rest passed through and joined after.
  std::string rope(const std::string& n, const std::string& x, int64_t heads) {
    const int64_t B = s_.batch, S = s_.sequence, d = c_.rotaryDim();
    if (c_.kvLora == 0 && d < c_.headDim) {  // (Slice: begin and size, as MindSpore's)
      std::string rot = op(n + ".rot", "Slice", {x, "[0, 0, 0, 0]", shapeText({B, heads, S, d})});
      std::string pass = op(n + ".pass", "Slice", {x, fmt::format("[0, 0, 0, {}]", d), shapeText({B, heads, S, c_.headDim - d})});
      return op(n, "Concat", {ropeAll(n + ".rotated", rot, heads), pass}, "{axis: -1}");
    }
    return ropeAll(n, x, heads);
  }
  std::string ropeAll(const std::string& n, const std::string& x, int64_t heads) {
    const int64_t B = s_.batch, S = s_.sequence, d = c_.rotaryDim(), half = d / 2;
    std::string lo = op(n + ".x1", "Slice", {x, "[0, 0, 0, 0]", shapeText({B, heads, S, half})});
    std::string hi = op(n + ".x2", "Slice", {x, fmt::format("[0, 0, 0, {}]", half), shapeText({B, heads, S, d - half})});
    std::string neg = op(n + ".neg", "Neg", {hi});
    std::string rotated = op(n + ".rotate_half", "Concat", {neg, lo}, "{axis: -1}");
    std::string cos = op(n + ".cos", "Mul", {x, "rotary_cos"});
    std::string sin = op(n + ".sin", "Mul", {rotated, "rotary_sin"});
    return op(n, "Add", {cos, sin});
  }
  // [tokens, heads * d] -> [batch, heads, sequence, d], with Qwen3's per-head norm before rope.
  std::string heads(const std::string& n, const std::string& module, const std::string& y, int64_t count, bool norm) {
    const int64_t B = s_.batch, S = s_.sequence, d = c_.headDim;
    module_ = module;
    std::string r = op(n + "_heads", "Reshape", {y, shapeText({B, S, count, d})});
    if (norm) r = rmsNorm(n + "_norm", module.substr(0, module.rfind('.')) + "." + n + "_norm", r, d);
    module_ = module;
    std::string t = op(n + "_t", "Transpose", {r, "[0, 2, 1, 3]"});
    module_ = module.substr(0, module.rfind('.'));  // self_attn: rope is the attention module's
    if (!rope_) {                                   // Llama 4's NoPE layer: no rotation; its queries scaled by position
      if (n == "q" && temperatureScaled()) return op("q_scaled", "Mul", {t, "attention_scales"});
      return t;
    }
    std::string rotated = rope(n + "_rope", t, count);
    return c_.l2QkNorm ? l2Norm(n + "_l2norm", rotated) : rotated;
  }
  // Grouped-query attention's repeat_kv: [B, g, S, d] -> [B, heads, S, d].
  std::string repeatKv(const std::string& n, const std::string& x) {
    const int64_t B = s_.batch, S = s_.sequence, d = c_.headDim, g = c_.kvHeads, rep = c_.heads / c_.kvHeads;
    if (rep == 1) return x;
    std::string e = op(n + "_e", "Reshape", {x, shapeText({B, g, 1, S, d})});
    std::string b = op(n + "_b", "BroadcastTo", {e, shapeText({B, g, rep, S, d})});
    return op(n + "_rep", "Reshape", {b, shapeText({B, c_.heads, S, d})});
  }

  std::string attention(const std::string& at, const std::string& x) {
    const int64_t B = s_.batch, S = s_.sequence, d = c_.headDim, q = c_.heads * d, kv = c_.kvHeads * d;
    std::string qp = linear("q_proj", at + ".q_proj", x, c_.hidden, q, Split::Column, c_.attentionBias);
    std::string kp = linear("k_proj", at + ".k_proj", x, c_.hidden, kv, Split::Column, c_.attentionBias);
    std::string vp = linear("v_proj", at + ".v_proj", x, c_.hidden, kv, Split::Column, c_.attentionBias);
    if (c_.qkNormWide) {  // OLMoE: over the whole projections, before the heads are split out
      qp = rmsNorm("q_norm", at + ".q_norm", qp, q);
      kp = rmsNorm("k_norm", at + ".k_norm", kp, kv);
    }
    std::string qh = heads("q", at + ".q_proj", qp, c_.heads, c_.qkNorm);
    std::string kh = heads("k", at + ".k_proj", kp, c_.kvHeads, c_.qkNorm);
    module_ = at + ".v_proj";
    std::string vr = op("v_heads", "Reshape", {vp, shapeText({B, S, c_.kvHeads, d})});
    std::string vh = op("v_t", "Transpose", {vr, "[0, 2, 1, 3]"});
    module_ = at;
    return attend(at, qh, repeatKv("k", kh), repeatKv("v", vh), d, d);
  }

  // GPT-NeoX's attention: one query_key_value projection whose output holds each head's
  // [q; k; v] (viewed [.., heads, 3 d] and chunked: Megatron's layout, so splitting its rows over
  // TP gives each rank whole heads), rotary on each head's first rotaryDim, then `dense`.
  std::string neoxAttention(const std::string& at, const std::string& x) {
    const int64_t B = s_.batch, S = s_.sequence, d = c_.headDim, A = c_.heads;
    std::string qkv = linear("qkv_proj", at + ".query_key_value", x, c_.hidden, 3 * A * d, Split::Column, c_.attentionBias);
    std::string r = op("qkv_heads", "Reshape", {qkv, shapeText({B, S, A, 3 * d})});
    std::string t = op("qkv_t", "Transpose", {r, "[0, 2, 1, 3]"});
    auto part = [&](const char* n, int64_t i) {
      return op(n, "Slice", {t, fmt::format("[0, 0, 0, {}]", i * d), shapeText({B, A, S, d})});
    };
    module_ = at;
    std::string q = rope("q_rope", part("q_t", 0), A), k = rope("k_rope", part("k_t", 1), A), v = part("v_t", 2);
    return attend(at, q, k, v, d, d);
  }

  // Falcon's attention: one query_key_value projection viewed [.., groups, heads / groups + 2, d]
  // (each key-value group's queries, then its key and value: so splitting its rows over TP by
  // whole groups gives each rank its heads' keys), the keys and values broadcast to the group's
  // heads, rotary on the whole head (or ALiBi in the scores), then `dense`.
  std::string falconAttention(const std::string& at, const std::string& x) {
    const int64_t B = s_.batch, S = s_.sequence, d = c_.headDim, A = c_.heads, G = c_.kvHeads, R = A / G + 2;
    std::string qkv = linear("qkv_proj", at + ".query_key_value", x, c_.hidden, (A + 2 * G) * d, Split::Column, c_.attentionBias);
    std::string grouped = op("qkv_groups", "Reshape", {qkv, shapeText({B, S, G, R, d})});
    module_ = at;
    auto part = [&](const std::string& n, int64_t first, int64_t count, int64_t heads) {
      std::string sliced =
          op(n + "_part", "Slice", {grouped, fmt::format("[0, 0, 0, {}, 0]", first), shapeText({B, S, G, count, d})});
      std::string flat = op(n + "_heads", "Reshape", {sliced, shapeText({B, S, heads, d})});
      return op(n + "_t", "Transpose", {flat, "[0, 2, 1, 3]"});
    };
    std::string q = part("q", 0, R - 2, A), k = part("k", R - 2, 1, G), v = part("v", R - 1, 1, G);
    if (c_.rotary()) q = rope("q_rope", q, A), k = rope("k_rope", k, G);
    return attend(at, q, repeatKv("k", k), repeatKv("v", v), d, d);
  }

  // softmax(q kᵀ / √d) v over [batch, heads, sequence, ·] (GPT-OSS: with each head's sink logit
  // in the denominator; Falcon-RW: ALiBi's biases added to the scores), then o_proj (GPT-NeoX's
  // and Falcon's dense).
  std::string attend(const std::string& at, const std::string& q, const std::string& k, const std::string& v, int64_t qkDim,
                     int64_t vDim) {
    const int64_t B = s_.batch, S = s_.sequence, A = c_.heads;
    module_ = at;
    // Each rank's query chunk (CP) against every key and value, gathered over the context ranks.
    Strategy heads{{dp(), tp(), cp(), 1}, {dp(), tp(), 1, 1}};
    // A decoder's attention is causal (transformers' SDPA and flash paths pass is_causal): its
    // products read the keys up to each query's position, a sliding-window layer's the last
    // `window` of them, and the kernel skips the rest (the mask itself is not built).
    // Llama 4's chunked layers: the keys of the query's own chunk up to it.
    const std::string reach = "causal: true" + (window_ > 0 ? fmt::format(", window: {}", window_) : std::string()) +
                              (chunk_ > 0 ? fmt::format(", chunk: {}", chunk_) : std::string());
    std::string scores =
        op(c_.alibi ? "scores_raw" : "scores", "BatchMatMul", {q, k}, "{transpose_b: true, " + reach + "}", heads);
    // (FalconAttention: (q kᵀ + alibi) / √d.)
    if (c_.alibi) scores = op("scores", "Add", {scores, "alibi"});
    const double scale = c_.scoreScale > 0 ? c_.scoreScale : 1.0 / std::sqrt(static_cast<double>(qkDim));
    std::string scaled = op(c_.attentionSoftcap > 0 ? "scaled_raw" : "scaled", "Mul", {scores, number(scale)});
    if (c_.attentionSoftcap > 0) scaled = softcap("scaled", scaled, c_.attentionSoftcap);
    std::string probs;
    if (c_.sinks) {
      param(at + ".sinks", {A});
      std::string sink = op("sink_heads", "Reshape", {at + ".sinks", "[1, " + std::to_string(A) + ", 1, 1]"});
      std::string column = op("sink_column", "BroadcastTo", {sink, shapeText({B, A, S, 1})});
      std::string logits = op("with_sink", "Concat", {scaled, column}, "{axis: -1}");
      std::string all = op("probs_with_sink", "Softmax", {logits}, "{axis: -1}");
      probs = op("probs", "Slice", {all, "[0, 0, 0, 0]", shapeText({B, A, S, S})});
    } else {
      probs = op("probs", "Softmax", {scaled}, "{axis: -1}");
    }
    std::string ctx = op("context", "BatchMatMul", {probs, v}, "{" + reach + "}", heads);
    std::string ct = op("context_t", "Transpose", {ctx, "[0, 2, 1, 3]"});
    std::string merged = op("context_flat", "Reshape", {ct, shapeText({tokens(), A * vDim})});
    return linear("o_proj", at + (c_.neox || c_.falcon ? ".dense" : ".o_proj"), merged, A * vDim, c_.hidden, Split::Row,
                  c_.outputBias);
  }

  // DeepSeek's multi-head latent attention: queries through a low-rank compression (q_a, norm,
  // q_b), keys and values from one compressed latent (kv_a_proj_with_mqa, norm, kv_b) plus a
  // rotary key part shared by every head; the rotary parts of q and k rotated.
  std::string latentAttention(const std::string& at, const std::string& x) {
    const int64_t B = s_.batch, S = s_.sequence, A = c_.heads, T = tokens();
    const int64_t nope = c_.qkNope, rot = c_.qkRope, qk = nope + rot, vd = c_.vHead;
    std::string q;
    if (c_.qLora > 0) {
      std::string qa = linear("q_a_proj", at + ".q_a_proj", x, c_.hidden, c_.qLora, Split::None, false);
      std::string qn = rmsNorm("q_a_norm", at + ".q_a_layernorm", qa, c_.qLora);
      q = linear("q_b_proj", at + ".q_b_proj", qn, c_.qLora, A * qk, Split::Column, false);
    } else {
      q = linear("q_proj", at + ".q_proj", x, c_.hidden, A * qk, Split::Column, false);
    }
    module_ = at;
    std::string qh = op("q_heads", "Reshape", {q, shapeText({B, S, A, qk})});
    std::string qt = op("q_t", "Transpose", {qh, "[0, 2, 1, 3]"});
    std::string qNope = op("q_nope", "Slice", {qt, "[0, 0, 0, 0]", shapeText({B, A, S, nope})});
    std::string qPe = op("q_pe", "Slice", {qt, fmt::format("[0, 0, 0, {}]", nope), shapeText({B, A, S, rot})});
    std::string qRot = rope("q_rope", qPe, A);
    std::string qAll = op("q_all", "Concat", {qNope, qRot}, "{axis: -1}");
    std::string kva = linear("kv_a_proj", at + ".kv_a_proj_with_mqa", x, c_.hidden, c_.kvLora + rot, Split::None, false);
    module_ = at;
    std::string latent = op("kv_latent", "Slice", {kva, "[0, 0]", shapeText({T, c_.kvLora})});
    std::string kPe = op("k_pe", "Slice", {kva, fmt::format("[0, {}]", c_.kvLora), shapeText({T, rot})});
    std::string kPeH = op("k_pe_heads", "Reshape", {kPe, shapeText({B, S, 1, rot})});
    std::string kPeT = op("k_pe_t", "Transpose", {kPeH, "[0, 2, 1, 3]"});
    std::string kRot = rope("k_rope", kPeT, 1);
    std::string kRotAll = op("k_rope_heads", "BroadcastTo", {kRot, shapeText({B, A, S, rot})});
    std::string kvn = rmsNorm("kv_a_norm", at + ".kv_a_layernorm", latent, c_.kvLora);
    std::string kv = linear("kv_b_proj", at + ".kv_b_proj", kvn, c_.kvLora, A * (nope + vd), Split::Column, false);
    module_ = at;
    std::string kvh = op("kv_heads", "Reshape", {kv, shapeText({B, S, A, nope + vd})});
    std::string kvt = op("kv_t", "Transpose", {kvh, "[0, 2, 1, 3]"});
    std::string kNope = op("k_nope", "Slice", {kvt, "[0, 0, 0, 0]", shapeText({B, A, S, nope})});
    std::string v = op("v", "Slice", {kvt, fmt::format("[0, 0, 0, {}]", nope), shapeText({B, A, S, vd})});
    std::string k = op("k_all", "Concat", {kNope, kRotAll}, "{axis: -1}");
    return attend(at, qAll, k, v, qk, vd);
  }

  std::string denseMlp(const std::string& at, const std::string& x, int64_t ffn, bool bias, const std::string& n = "") {
    if (c_.plainMlp) {  // StarCoder2's c_fc -> tanh GeLU -> c_proj; GPT-NeoX's and Falcon's dense_h_to_4h -> GeLU ->
                        // dense_4h_to_h
      const bool dense = c_.neox || c_.falcon;
      std::string fc = linear(n + "c_fc", at + (dense ? ".dense_h_to_4h" : ".c_fc"), x, c_.hidden, ffn, Split::Column, bias);
      module_ = at;
      std::string act = op(n + "act", c_.exactGelu ? "ExactGeLU" : "GeLU", {fc});
      return linear(n + "c_proj", at + (dense ? ".dense_4h_to_h" : ".c_proj"), act, ffn, c_.hidden, Split::Row, bias);
    }
    std::string gate = linear(n + "gate_proj", at + ".gate_proj", x, c_.hidden, ffn, Split::Column, bias);
    std::string up = linear(n + "up_proj", at + ".up_proj", x, c_.hidden, ffn, Split::Column, bias);
    module_ = at;
    std::string act = op(n + "act", c_.gatedGelu ? "GeLU" : "SiLU", {gate});  // Gemma's GeGLU: tanh GeLU
    std::string gated = op(n + "gated", "Mul", {act, up});
    return linear(n + "down_proj", at + ".down_proj", gated, ffn, c_.hidden, Split::Row, bias);
  }

  // DeepSeek's group-limited routing: the scores [tokens, groups, per group] of the topk_group
  // best groups by `groupScore` [tokens, groups], the others zeroed, as [tokens, experts].
  std::string inKeptGroups(const std::string& grouped, const std::string& groupScore) {
    const int64_t T = tokens(), G = c_.groups;
    std::string keptGroups = op("group_topk", "TopK", {groupScore, std::to_string(c_.groupsKept)});
    std::string hot = op("group_onehot", "OneHot", {keptGroups + ":1", std::to_string(G), "1.0", "0.0"});
    std::string mask = op("group_mask", "ReduceSum", {hot, "1"});
    std::string mask3 = op("group_mask_b", "Reshape", {mask, shapeText({T, G, 1})});
    std::string masked = op("masked_groups", "Mul", {grouped, mask3});
    return op("masked_scores", "Reshape", {masked, shapeText({T, c_.experts})});
  }

  // The router's choice of K experts per token: [tokens, K] weights and indices.
  std::pair<std::string, std::string> route(const std::string& at, const std::string& x) {
    const int64_t E = c_.experts, K = c_.expertsPerToken, T = tokens();
    const std::string router = at + (c_.family == DecoderFamily::GptOss || c_.llama4 ? ".router" : ".gate");
    module_ = router;
    param(router + ".weight", {E, c_.hidden});
    std::string logits =
        op("router", "MatMul", {x, router + ".weight"}, "{transpose_b: true}", Strategy{{tokenSplit(), 1}, {1, 1}});
    if (c_.routerBias) {
      param(router + ".bias", {E});
      logits = op("router_bias", "Add", {logits, router + ".bias"});
    }
    std::string weights, indices;
    switch (c_.routing) {
      case Routing::SoftmaxTopK: {
        std::string probs = op("router_probs", "Softmax", {logits}, "{axis: -1}");
        std::string topk = op("topk", "TopK", {probs, std::to_string(K)});
        weights = topk + ":0", indices = topk + ":1";
        break;
      }
      case Routing::TopKSigmoidInput: {  // (the others' scores are sigmoid(-inf): 0)
        std::string topk = op("topk", "TopK", {logits, std::to_string(K)});
        weights = op("topk_scores", "Sigmoid", {topk + ":0"}), indices = topk + ":1";
        break;
      }
      case Routing::TopKSoftmax: {
        std::string topk = op("topk", "TopK", {logits, std::to_string(K)});
        weights = op("topk_probs", "Softmax", {topk + ":0"}, "{axis: -1}"), indices = topk + ":1";
        break;
      }
      case Routing::SigmoidGroupLimited: {
        // Each group scored by its two best experts; the topk_group best groups kept, the top K
        // experts of those chosen; the weights are their sigmoid scores. (The per-expert
        // correction bias moves selection only, not the work: balanced routing is assumed.)
        const int64_t per = E / c_.groups;
        std::string scores = op("router_scores", "Sigmoid", {logits});
        std::string grouped = op("groups", "Reshape", {scores, shapeText({T, c_.groups, per})});
        std::string best2 = op("group_best2", "TopK", {grouped, std::to_string(std::min<int64_t>(2, per))});
        std::string groupScore = op("group_scores", "ReduceSum", {best2 + ":0", "-1"});
        std::string topk = op("topk", "TopK", {inKeptGroups(grouped, groupScore), std::to_string(K)});
        indices = topk + ":1";
        weights = op("topk_scores", "GatherElements", {scores, indices}, "{axis: 1}");
        break;
      }
      case Routing::SoftmaxGroupLimited: {
        // DeepSeek-V2's device-limited routing: each group scored by its best expert, the
        // topk_group best groups kept, the top K of their experts' softmax scores chosen.
        std::string scores = op("router_probs", "Softmax", {logits}, "{axis: -1}");
        std::string grouped = op("groups", "Reshape", {scores, shapeText({T, c_.groups, E / c_.groups})});
        std::string groupScore = op("group_scores", "ReduceMax", {grouped, "-1"});
        std::string topk = op("topk", "TopK", {inKeptGroups(grouped, groupScore), std::to_string(K)});
        weights = topk + ":0", indices = topk + ":1";
        break;
      }
    }
    if (c_.normTopK) {
      std::string sum = op("topk_sum", "ReduceSum", {weights, "-1"}, "{keep_dims: true}");
      weights = op("topk_norm", "RealDiv", {weights, sum});
    }
    if (c_.routedScaling != 1) weights = op("topk_scaled", "Mul", {weights, fmt::format("{}", c_.routedScaling)});
    return {weights, indices};
  }

  // A grouped expert product over [G, E, C, in] (E split by expert parallelism): transformers 5's
  // fused weights [E, out, in] (GPT-OSS: [E, in, out] and a bias [E, out]). With expert tensor
  // parallelism a column product splits `out` over TP and a row product `in` (Megatron's fc1 and
  // fc2 of each expert); the tokens' groups are then split over the expert-data ranks only, every
  // TP rank computing its columns for all of them.
  enum class ExpertSplit { Column, Row };
  std::string expertProduct(const std::string& n, const std::string& x, const std::string& weight, int64_t in, int64_t out,
                            ExpertSplit split) {
    const int64_t E = c_.experts;
    // (GPT-OSS's and Llama 4's experts hold [E, in, out], a bmm's right operand.)
    const bool inOut = c_.family == DecoderFamily::GptOss || c_.llama4;
    param(weight, inOut ? std::vector<int64_t>{E, in, out} : std::vector<int64_t>{E, out, in});
    const int64_t etp = expertTensor();
    const int64_t inSplit = split == ExpertSplit::Row ? etp : 1, outSplit = split == ExpertSplit::Column ? etp : 1;
    Strategy grouped{{dispatchSplit() / etp / ep(), ep(), 1, inSplit},
                     inOut ? std::vector<int64_t>{ep(), inSplit, outSplit} : std::vector<int64_t>{ep(), outSplit, inSplit}};
    std::string y = op(n, "BatchMatMul", {x, weight}, inOut ? "" : "{transpose_b: true}", grouped);
    if (!c_.expertBias) return y;
    param(weight + "_bias", {E, out});
    std::string b = op(n + "_bias_b", "Reshape", {weight + "_bias", shapeText({E, 1, out})});
    return op(n + "_bias", "Add", {y, b});
  }
  // The fused gate_up product's two halves, [G, E, C, F] each. With expert tensor parallelism each
  // TP rank's block of the 2F columns holds its gate and up columns in turn (Megatron-Core's fc1
  // layout for a gated unit, into which its checkpoint converters permute transformers'
  // [gate; up]), so the halves are taken per rank block and no rank needs another's columns.
  // Without degrees (a searched plan, strategies given, `irc import`) the blocks are those of the
  // largest TP group within a node (8 on every cluster preset), so any TP dividing it splits the
  // experts' columns as Megatron does.
  static constexpr int64_t kNodeTensorBlocks = 8;
  int64_t gateUpBlocks() const { return d_ ? d_->etp : std::gcd(c_.expertFfn, kNodeTensorBlocks); }
  std::pair<std::string, std::string> gateUpHalves(const std::string& gu, int64_t groups, int64_t capacity) {
    const int64_t E = c_.experts, F = c_.expertFfn, etp = gateUpBlocks();
    if (etp == 1) {
      std::string parts = op("gate_up_split", "Split", {gu}, "{axis: -1, output_num: 2}");
      return {parts + ":0", parts + ":1"};
    }
    std::string blocks = op("gate_up_blocks", "Reshape", {gu, shapeText({groups, E, capacity, etp, 2, F / etp})});
    std::string parts = op("gate_up_split", "Split", {blocks}, "{axis: 4, output_num: 2}");
    std::string gate = op("gate_cols", "Reshape", {parts + ":0", shapeText({groups, E, capacity, F})});
    std::string up = op("up_cols", "Reshape", {parts + ":1", shapeText({groups, E, capacity, F})});
    return {gate, up};
  }

  // The sparse MoE block (transformers 5's MixtralSparseMoeBlock, Qwen*MoeSparseMoeBlock,
  // DeepseekV3MoE, GptOssMLP): the router, the tokens permuted into their experts' slots, the
  // experts as one grouped product over the expert dim, combined back; shared experts beside.
  std::string moe(const std::string& at, const std::string& x) {
    const int64_t E = c_.experts, K = c_.expertsPerToken, H = c_.hidden;
    // The dispatch's groups: each sequence, cut into one chunk per context and model-parallel
    // rank, so every rank of the DP x CP x TP grid dispatches its own tokens (Megatron-Core's
    // dispatcher runs on the sequence-parallel tokens) and no rank repeats another's experts.
    const int64_t chunks = cp() * tp(), G = s_.batch * chunks, S = s_.sequence / chunks;
    // Balanced routing, the published benchmarks' forced balance: each expert gets its share of
    // a group's S * K choices (docs/config-json.md).
    const double share = static_cast<double>(S * K) / static_cast<double>(E);
    const int64_t capacity = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(s_.capacityFactor * share - 1e-9)), 1, S * K);
    auto [weights, indices] = route(at, x);
    module_ = at + ".experts";
    std::string routed = x;
    if (c_.routing == Routing::TopKSigmoidInput) {
      // Llama 4 scales the token by its expert's score before the expert (one expert a token), and
      // sums the experts' outputs unweighted: the combine's weights are ones (0 · w + 1).
      routed = op("routed_in", "Mul", {x, weights});
      std::string zero = op("route_weights_zero", "Mul", {weights, "0.0"});
      weights = op("route_weights_one", "Add", {zero, "1.0"});
    }
    std::string w3 = op("route_weights", "Reshape", {weights, shapeText({G, S, K})});
    std::string i3 = op("route_experts", "Reshape", {indices, shapeText({G, S, K})});
    std::string x3 = op("tokens", "Reshape", {routed, shapeText({G, S, H})});
    const int64_t groupSplit = dispatchSplit();
    std::string slots = op("dispatch", "MoeDispatch", {x3, i3}, fmt::format("{{num_experts: {}, capacity: {}}}", E, capacity),
                           Strategy{{groupSplit, 1, 1}, {groupSplit, 1, 1}});
    std::string gu = expertProduct("gate_up", slots, at + ".experts.gate_up_proj", H, 2 * c_.expertFfn, ExpertSplit::Column);
    auto [gatePart, upPart] = gateUpHalves(gu, G, capacity);
    std::string gated;
    if (c_.swigluLimit > 0) {
      // GPT-OSS's clamped SwiGLU: (clamp(up, ±limit) + 1) · gate · sigmoid(1.702 gate), gate <= limit.
      const std::string limit = fmt::format("{}", c_.swigluLimit);
      std::string gate = op("gate_clamp", "Minimum", {gatePart, limit});
      std::string upHigh = op("up_clamp_high", "Minimum", {upPart, limit});
      std::string up = op("up_clamp", "Maximum", {upHigh, fmt::format("{}", -c_.swigluLimit)});
      std::string scaled = op("gate_scaled", "Mul", {gate, "1.702"});
      std::string sig = op("gate_sigmoid", "Sigmoid", {scaled});
      std::string glu = op("glu", "Mul", {gate, sig});
      std::string up1 = op("up_plus_one", "Add", {up, "1.0"});
      gated = op("gated", "Mul", {up1, glu});
    } else {
      std::string act = op("act", "SiLU", {gatePart});
      gated = op("gated", "Mul", {act, upPart});
    }
    std::string down = expertProduct("down", gated, at + ".experts.down_proj", c_.expertFfn, H, ExpertSplit::Row);
    std::string combined =
        op("combine", "MoeCombine", {down, i3, w3}, "", Strategy{{groupSplit, 1, 1, 1}, {groupSplit, 1, 1}, {groupSplit, 1, 1}});
    std::string y = op("experts_out", "Reshape", {combined, shapeText({tokens(), H})});
    if (c_.sharedExpertFfn == 0) return y;
    // Shared experts on every token (DeepSeek's n_shared_experts as one SwiGLU of their summed
    // width; Qwen2-MoE's scaled by its sigmoid gate).
    const std::string sharedAt = at + (c_.kvLora > 0 ? ".shared_experts" : ".shared_expert");  // DeepSeek's
    std::string shared = denseMlp(sharedAt, x, c_.sharedExpertFfn, false, "shared_");
    if (c_.sharedExpertGate) {
      module_ = at + ".shared_expert_gate";
      param(at + ".shared_expert_gate.weight", {1, H});
      std::string g = op("shared_gate", "MatMul", {x, at + ".shared_expert_gate.weight"}, "{transpose_b: true}",
                         Strategy{{tokenSplit(), 1}, {1, 1}});
      std::string sg = op("shared_gate_sigmoid", "Sigmoid", {g});
      module_ = at;
      shared = op("shared_scaled", "Mul", {shared, sg});
    }
    module_ = at;
    return op("moe_out", "Add", {y, shared});
  }

  std::string layer(int64_t l, const std::string& x) {
    const std::string at = layerModule(l);
    prefix_ = fmt::format("L{}.", l);
    window_ = c_.slidingLayer[l] && c_.slidingWindow < s_.sequence ? c_.slidingWindow : 0;
    rope_ = c_.ropeIn(l);
    chunk_ = c_.llama4 && c_.chunkedLayer[l] && c_.attentionChunk > 0 && c_.attentionChunk < s_.sequence ? c_.attentionChunk : 0;
    // (Falcon's parallel layer with two norms names them ln_attn and ln_mlp.)
    const bool twoParallelNorms = c_.falcon && c_.parallelResidual && !c_.sharedNorm;
    std::string h = gatheredForColumns(
        "input_norm", norm("input_norm", at + (twoParallelNorms ? ".ln_attn" : ".input_layernorm"), x, c_.hidden, l > 0));
    std::string a = c_.kvLora > 0 ? latentAttention(at + ".self_attn", h)
                    : c_.neox     ? neoxAttention(at + ".attention", h)
                    : c_.falcon   ? falconAttention(at + ".self_attention", h)
                                  : attention(at + ".self_attn", h);
    if (c_.parallelResidual) {
      // GPT-NeoX's use_parallel_residual, Falcon's parallel_attn: x + attention(ln1(x)) +
      // mlp(ln2(x)), ln2 Falcon's ln_mlp or the attention's own norm (sharedNorm).
      std::string h2 = h;
      if (!c_.sharedNorm) {
        const char* mlpNorm = twoParallelNorms ? ".ln_mlp" : ".post_attention_layernorm";
        h2 = gatheredForColumns("post_norm", norm("post_norm", at + mlpNorm, x, c_.hidden, l > 0));
      }
      std::string m = denseMlp(at + ".mlp", h2, c_.intermediate, c_.mlpBias);
      module_ = at;
      std::string r1 = op("residual_attn", "Add", {x, a}, "", residualStrategy());
      std::string out = op("residual_mlp", "Add", {r1, m}, "", residualStrategy());
      prefix_.clear();
      return out;
    }
    // Gemma norms each block's output before its residual add (and the MLP's input by
    // pre_feedforward_layernorm); Granite scales it by residual_multiplier.
    if (c_.sandwichNorms) a = rmsNorm("post_attn_norm", at + ".post_attention_layernorm", a, c_.hidden, true);
    module_ = at;
    if (c_.residualScale != 1) a = op("attn_scaled", "Mul", {a, number(c_.residualScale)});
    std::string r1 = op("residual_attn", "Add", {x, a}, "", residualStrategy());
    std::string h2 = c_.sandwichNorms ? rmsNorm("pre_mlp_norm", at + ".pre_feedforward_layernorm", r1, c_.hidden, true)
                                      : norm("post_norm", at + ".post_attention_layernorm", r1, c_.hidden);
    bool sparse = c_.experts > 0 && c_.sparseLayer[l];
    const std::string mlp = at + (c_.llama4 ? ".feed_forward" : ".mlp");
    // (A mixture of experts routes the sequence-parallel tokens themselves.)
    std::string m = sparse ? moe(mlp, h2)
                           : denseMlp(mlp, gatheredForColumns(c_.sandwichNorms ? "pre_mlp_norm" : "post_norm", h2),
                                      c_.intermediate, c_.mlpBias);
    if (c_.sandwichNorms) m = rmsNorm("post_mlp_norm", at + ".post_feedforward_layernorm", m, c_.hidden, true);
    module_ = at;
    if (c_.residualScale != 1) m = op("mlp_scaled", "Mul", {m, number(c_.residualScale)});
    std::string out = op("residual_mlp", "Add", {r1, m}, "", residualStrategy());
    prefix_.clear();
    return out;
  }

  std::string parallelBlock() const {
    if (!d_) return fmt::format("parallel: {{device_num: {}}}\n", deviceNum_);
    std::string p = fmt::format("parallel: {{device_num: {}, fully_use_devices: false, enable_alltoall: true", d_->devices());
    if (d_->pp > 1) p += fmt::format(", pipeline_stages: {}, micro_batches: {}", d_->pp, microBatches_);
    if (d_->v > 1) p += fmt::format(", virtual_stages: {}", d_->v);
    return p + "}\n";
  }
  // Megatron's even split: layer l on virtual stage l * P * v / L, the embedding with the first
  // layer, the final norm and the head with the last.
  std::string stagesBlock() const {
    if (!d_ || d_->pp <= 1) return "";
    const int64_t chunks = d_->pp * d_->v;
    // (The embedding's ops by name: a glob `embed*` would take GPT-NeoX's head, module embed_out.)
    std::string s = "stages:\n  \"embed\": 0\n  \"embed_flat\": 0\n";
    if (c_.embeddingScale != 1) s += "  \"embed_scaled\": 0\n";
    for (int64_t l = 0; l < c_.layers; ++l) s += fmt::format("  \"L{}.*\": {}\n", l, l * chunks / c_.layers);
    s += fmt::format("  \"final_norm*\": {}\n  \"lm_head\": {}\n", chunks - 1, chunks - 1);
    return s;
  }

  const DecoderConfig& c_;
  const DecoderShape& s_;
  const ParallelDims* d_;
  int64_t microBatches_;
  int64_t deviceNum_;
  std::string inputs_, params_, ops_;
  std::string module_, prefix_;
  int64_t window_ = 0;  // the current layer's sliding window (0: it attends to every key)
  int64_t chunk_ = 0;   // its attention's chunk (Llama 4; 0: none)
  bool rope_ = true;    // whether it rotates its queries and keys (Llama 4's NoPE layers do not)
};

}  // namespace

std::optional<std::string> shapeError(const DecoderConfig& config, const DecoderShape& shape) {
  constexpr int64_t kMaxDim = int64_t{1} << 24;  // far past any run's, inside what shapes hold
  if (shape.batch > kMaxDim || shape.sequence > kMaxDim)
    return fmt::format(
        "a micro-batch of {} sequences of {} tokens is more than irc builds a config's model for (each at most {})", shape.batch,
        shape.sequence, kMaxDim);
  if (config.rotary() && config.rotaryDim() % 2 != 0)
    return fmt::format("rotary embeddings rotate halves: the rotary head dim {} must be even", config.rotaryDim());
  return std::nullopt;
}

std::optional<std::string> decoderModelText(const std::string& configText, const std::map<std::string, int64_t>& dims,
                                            const std::string& name, int64_t deviceNum, DiagnosticEngine& diags,
                                            int64_t* activeParameters) {
  std::optional<DecoderConfig> config = readDecoderConfig(configText, diags);
  if (!config) return std::nullopt;
  DecoderShape shape = defaultShape(*config, 1);
  for (const auto& [dim, size] : dims) {
    if (dim == "batch") shape.batch = size;
    else if (dim == "sequence") shape.sequence = size;
    else diags.error({}, fmt::format("--dim {}: a config.json model has the dims batch and sequence", dim));
  }
  if (auto e = shapeError(*config, shape)) diags.error({}, "--dim: " + *e);
  if (diags.hasErrors()) return std::nullopt;
  if (activeParameters) *activeParameters = activeParameterCount(*config);
  return decoderModelYaml(*config, shape, nullptr, 1, name, deviceNum);
}

DecoderShape defaultShape(const DecoderConfig& config, int64_t batch) {
  return {batch, std::min<int64_t>(config.maxPositions, 4096)};
}

std::string decoderModelYaml(const DecoderConfig& config, const DecoderShape& shape, const ParallelDims* degrees,
                             int64_t microBatches, const std::string& name, int64_t deviceNum) {
  return DecoderWriter(config, shape, degrees, microBatches, deviceNum).write(name);
}

}  // namespace irc
