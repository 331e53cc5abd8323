#include "frontends/hf_config/decoder_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace irc {
namespace {

using Strategy = std::vector<std::vector<int64_t>>;

// Writes the model's lists; each op line names its module.
class DecoderWriter {
 public:
  DecoderWriter(const DecoderConfig& c, const DecoderShape& s, const DegreePlan* d, int64_t deviceNum)
      : c_(c), s_(s), d_(d), deviceNum_(deviceNum) {}

  std::string write(const std::string& name) {
    const int64_t T = tokens();
    input("input_ids", {s_.batch, s_.sequence}, "int32");
    // model.rotary_emb's tables for each sequence's positions, [batch, sequence, head_dim] as
    // transformers computes them from position_ids (not trained: inputs), unsqueezed over the heads.
    input("position_cos", {s_.batch, s_.sequence, c_.headDim});
    input("position_sin", {s_.batch, s_.sequence, c_.headDim});
    param("model.embed_tokens.weight", {c_.vocab, c_.hidden});
    module_ = "model.embed_tokens";
    bool vocabSplit = d_ && d_->model > 1;  // Megatron's vocabulary-parallel embedding (MindSpore: whole indices)
    op("embed", "Gather", {"model.embed_tokens.weight", "input_ids"}, "{axis: 0}",
       vocabSplit ? Strategy{{tp(), 1}, {1, 1}} : Strategy{{1, 1}, {dp(), 1}});
    module_ = "model.rotary_emb";
    op("rotary_cos", "Reshape", {"position_cos", shapeText({s_.batch, 1, s_.sequence, c_.headDim})});
    op("rotary_sin", "Reshape", {"position_sin", shapeText({s_.batch, 1, s_.sequence, c_.headDim})});
    module_ = "model";
    std::string x = op("embed_flat", "Reshape", {"embed", shapeText({T, c_.hidden})});
    for (int64_t l = 0; l < c_.layers; ++l) x = layer(l, x);
    x = rmsNorm("final_norm", "model.norm", x, c_.hidden);
    std::string head = c_.tiedEmbeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    if (!c_.tiedEmbeddings) param(head, {c_.vocab, c_.hidden});
    module_ = "lm_head";
    op("lm_head", "MatMul", {x, head}, "{transpose_b: true}", Strategy{{dp(), 1}, {tp(), 1}});

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
  int64_t dp() const { return d_ ? d_->data : 1; }
  int64_t tp() const { return d_ ? d_->model : 1; }
  int64_t ep() const { return d_ ? d_->expert : 1; }

  static std::string shapeText(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

  void input(const std::string& n, const std::vector<int64_t>& shape, const char* dtype = "float32") {
    inputs_ += fmt::format("  - {{name: {}, shape: {}, dtype: {}}}\n", n, shapeText(shape), dtype);
  }
  void param(const std::string& n, const std::vector<int64_t>& shape) {
    params_ += fmt::format("  - {{name: {}, shape: {}, dtype: float32}}\n", n, shapeText(shape));
  }
  // An op of the current module; its name prefixed by the layer's. Returns its name.
  std::string op(const std::string& n, const std::string& type, const std::vector<std::string>& inputs,
                 const std::string& attrs = "", const std::optional<Strategy>& strategy = std::nullopt) {
    std::string full = prefix_ + n;
    ops_ += fmt::format("  - {{name: {}, type: {}, inputs: [{}]", full, type, fmt::join(inputs, ", "));
    if (!attrs.empty()) ops_ += ", attrs: " + attrs;
    if (strategy && d_) {
      std::vector<std::string> dims;
      for (const auto& s : *strategy) dims.push_back(shapeText(s));
      ops_ += fmt::format(", in_strategy: [{}]", fmt::join(dims, ", "));
    }
    ops_ += ", module: " + module_ + "}\n";
    return full;
  }
  // torch's nn.Linear: x [tokens, in] times weight [out, in] (+ bias); `column` splits out over
  // the model-parallel group, else in (Megatron's column and row pairs).
  std::string linear(const std::string& n, const std::string& module, const std::string& x, int64_t in, int64_t out, bool column,
                     bool bias) {
    module_ = module;
    param(module + ".weight", {out, in});
    Strategy s = column ? Strategy{{dp(), 1}, {tp(), 1}} : Strategy{{dp(), tp()}, {1, tp()}};
    std::string y = op(n, "MatMul", {x, module + ".weight"}, "{transpose_b: true}", s);
    if (!bias) return y;
    param(module + ".bias", {out});
    return op(n + "_bias", "Add", {y, module + ".bias"});
  }
  // RMSNorm as transformers computes it: x / sqrt(mean(x^2) + eps) * weight, over the last dim.
  std::string rmsNorm(const std::string& n, const std::string& module, const std::string& x, int64_t dim) {
    module_ = module;
    param(module + ".weight", {dim});
    std::string sq = op(n + ".square", "Mul", {x, x});
    std::string mean = op(n + ".mean", "ReduceMean", {sq, "-1"}, "{keep_dims: true}");
    std::string eps = op(n + ".eps", "Add", {mean, fmt::format("{}", c_.rmsEps)});
    std::string inv = op(n + ".rsqrt", "Pow", {eps, "-0.5"});
    std::string normed = op(n + ".normed", "Mul", {x, inv});
    return op(n, "Mul", {normed, module + ".weight"});
  }
  // Rotary position embedding of [batch, heads, sequence, head_dim]: x cos + rotate_half(x) sin.
  std::string rope(const std::string& n, const std::string& x, int64_t heads) {
    const int64_t B = s_.batch, S = s_.sequence, d = c_.headDim, half = d / 2;
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
    return rope(n + "_rope", t, count);
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
    std::string qp = linear("q_proj", at + ".q_proj", x, c_.hidden, q, true, c_.attentionBias);
    std::string kp = linear("k_proj", at + ".k_proj", x, c_.hidden, kv, true, c_.attentionBias);
    std::string vp = linear("v_proj", at + ".v_proj", x, c_.hidden, kv, true, c_.attentionBias);
    std::string qh = heads("q", at + ".q_proj", qp, c_.heads, c_.qkNorm);
    std::string kh = heads("k", at + ".k_proj", kp, c_.kvHeads, c_.qkNorm);
    module_ = at + ".v_proj";
    std::string vr = op("v_heads", "Reshape", {vp, shapeText({B, S, c_.kvHeads, d})});
    std::string vh = op("v_t", "Transpose", {vr, "[0, 2, 1, 3]"});
    module_ = at;
    std::string k = repeatKv("k", kh), v = repeatKv("v", vh);
    Strategy heads{{dp(), tp(), 1, 1}, {dp(), tp(), 1, 1}};
    std::string scores = op("scores", "BatchMatMul", {qh, k}, "{transpose_b: true}", heads);
    std::string scaled = op("scaled", "Mul", {scores, fmt::format("{}", 1.0 / std::sqrt(static_cast<double>(d)))});
    std::string probs = op("probs", "Softmax", {scaled}, "{axis: -1}");
    std::string ctx = op("context", "BatchMatMul", {probs, v}, "", heads);
    std::string ct = op("context_t", "Transpose", {ctx, "[0, 2, 1, 3]"});
    std::string merged = op("context_flat", "Reshape", {ct, shapeText({tokens(), q})});
    return linear("o_proj", at + ".o_proj", merged, q, c_.hidden, false, c_.outputBias);
  }

  std::string denseMlp(const std::string& at, const std::string& x, int64_t ffn, bool bias, const std::string& n = "") {
    std::string gate = linear(n + "gate_proj", at + ".gate_proj", x, c_.hidden, ffn, true, bias);
    std::string up = linear(n + "up_proj", at + ".up_proj", x, c_.hidden, ffn, true, bias);
    module_ = at;
    std::string act = op(n + "act", "SiLU", {gate});
    std::string gated = op(n + "gated", "Mul", {act, up});
    return linear(n + "down_proj", at + ".down_proj", gated, ffn, c_.hidden, false, bias);
  }

  // The sparse MoE block (transformers 5's MixtralSparseMoeBlock / Qwen*MoeSparseMoeBlock): the
  // router's softmax top-k (renormalised where the family does), the tokens permuted into their
  // experts' slots, the experts as one grouped product over the expert dim, combined back.
  std::string moe(const std::string& at, const std::string& x) {
    const int64_t B = s_.batch, S = s_.sequence, E = c_.experts, K = c_.expertsPerToken, F = c_.expertFfn, H = c_.hidden;
    // Balanced routing, the published benchmarks' forced balance: each expert gets its share of
    // a sequence's S * K choices (docs/config-json.md).
    const int64_t capacity = (S * K + E - 1) / E;
    module_ = at + ".gate";
    param(at + ".gate.weight", {E, H});
    std::string logits = op("router", "MatMul", {x, at + ".gate.weight"}, "{transpose_b: true}", Strategy{{dp(), 1}, {1, 1}});
    std::string probs = op("router_probs", "Softmax", {logits}, "{axis: -1}");
    std::string topk = op("topk", "TopK", {probs, std::to_string(K)});
    std::string weights = topk + ":0";
    if (c_.normTopK) {
      std::string sum = op("topk_sum", "ReduceSum", {weights, "-1"}, "{keep_dims: true}");
      weights = op("topk_norm", "RealDiv", {weights, sum});
    }
    module_ = at + ".experts";
    std::string w3 = op("route_weights", "Reshape", {weights, shapeText({B, S, K})});
    std::string i3 = op("route_experts", "Reshape", {topk + ":1", shapeText({B, S, K})});
    std::string x3 = op("tokens", "Reshape", {x, shapeText({B, S, H})});
    std::string slots = op("dispatch", "MoeDispatch", {x3, i3}, fmt::format("{{num_experts: {}, capacity: {}}}", E, capacity),
                           Strategy{{dp(), 1, 1}, {dp(), 1, 1}});
    param(at + ".experts.gate_up_proj", {E, 2 * F, H});
    param(at + ".experts.down_proj", {E, H, F});
    Strategy grouped{{dp() / ep(), ep(), 1, 1}, {ep(), 1, 1}};
    std::string gu = op("gate_up", "BatchMatMul", {slots, at + ".experts.gate_up_proj"}, "{transpose_b: true}", grouped);
    std::string parts = op("gate_up_split", "Split", {gu}, "{axis: -1, output_num: 2}");
    std::string act = op("act", "SiLU", {parts + ":0"});
    std::string gated = op("gated", "Mul", {act, parts + ":1"});
    std::string down = op("down", "BatchMatMul", {gated, at + ".experts.down_proj"}, "{transpose_b: true}", grouped);
    std::string combined = op("combine", "MoeCombine", {down, i3, w3}, "", Strategy{{dp(), 1, 1, 1}, {dp(), 1, 1}, {dp(), 1, 1}});
    std::string y = op("experts_out", "Reshape", {combined, shapeText({tokens(), H})});
    if (c_.sharedExpertFfn == 0) return y;
    // Qwen2-MoE's shared expert, scaled by its sigmoid gate, added to every token.
    std::string shared = denseMlp(at + ".shared_expert", x, c_.sharedExpertFfn, false, "shared_");
    module_ = at + ".shared_expert_gate";
    param(at + ".shared_expert_gate.weight", {1, H});
    std::string g =
        op("shared_gate", "MatMul", {x, at + ".shared_expert_gate.weight"}, "{transpose_b: true}", Strategy{{dp(), 1}, {1, 1}});
    std::string sg = op("shared_gate_sigmoid", "Sigmoid", {g});
    module_ = at;
    std::string scaled = op("shared_scaled", "Mul", {shared, sg});
    return op("moe_out", "Add", {y, scaled});
  }

  std::string layer(int64_t l, const std::string& x) {
    const std::string at = fmt::format("model.layers.{}", l);
    prefix_ = fmt::format("L{}.", l);
    std::string h = rmsNorm("input_norm", at + ".input_layernorm", x, c_.hidden);
    std::string a = attention(at + ".self_attn", h);
    module_ = at;
    std::string r1 = op("residual_attn", "Add", {x, a});
    std::string h2 = rmsNorm("post_norm", at + ".post_attention_layernorm", r1, c_.hidden);
    bool sparse = c_.experts > 0 && c_.sparseLayer[l];
    std::string m = sparse ? moe(at + ".mlp", h2) : denseMlp(at + ".mlp", h2, c_.intermediate, c_.mlpBias);
    module_ = at;
    std::string out = op("residual_mlp", "Add", {r1, m});
    prefix_.clear();
    return out;
  }

  std::string parallelBlock() const {
    if (!d_) return fmt::format("parallel: {{device_num: {}}}\n", deviceNum_);
    std::string p = fmt::format("parallel: {{device_num: {}, fully_use_devices: false, enable_alltoall: true", d_->devices());
    if (d_->pipelineStages > 1)
      p += fmt::format(", pipeline_stages: {}, micro_batches: {}", d_->pipelineStages, d_->microBatches);
    if (d_->virtualStages > 1) p += fmt::format(", virtual_stages: {}", d_->virtualStages);
    return p + "}\n";
  }
  // Megatron's even split: layer l on virtual stage l * P * v / L, the embedding with the first
  // layer, the final norm and the head with the last.
  std::string stagesBlock() const {
    if (!d_ || d_->pipelineStages <= 1) return "";
    const int64_t chunks = d_->pipelineStages * d_->virtualStages;
    std::string s = "stages:\n  \"embed*\": 0\n";
    for (int64_t l = 0; l < c_.layers; ++l) s += fmt::format("  \"L{}.*\": {}\n", l, l * chunks / c_.layers);
    s += fmt::format("  \"final_norm*\": {}\n  \"lm_head\": {}\n", chunks - 1, chunks - 1);
    return s;
  }

  const DecoderConfig& c_;
  const DecoderShape& s_;
  const DegreePlan* d_;
  int64_t deviceNum_;
  std::string inputs_, params_, ops_;
  std::string module_, prefix_;
};

}  // namespace

DecoderShape defaultShape(const DecoderConfig& config, int64_t batch) {
  return {batch, std::min<int64_t>(config.maxPositions, 4096)};
}

std::string decoderModelYaml(const DecoderConfig& config, const DecoderShape& shape, const DegreePlan* degrees,
                             const std::string& name, int64_t deviceNum) {
  return DecoderWriter(config, shape, degrees, deviceNum).write(name);
}

}  // namespace irc
