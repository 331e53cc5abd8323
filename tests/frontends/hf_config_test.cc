// A Hugging Face config.json as a plan's graph: the families' parameter counts as torch and the
// model cards give them, located errors for what is not built, MindFormers' degrees checked, and
// a tiny Mixtral with expert parallelism dispatching by AlltoAll and verifying on every rank.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "frontends/hf_config/hf_config.h"
#include "tests/approx.h"
#include "tests/test_util.h"

namespace irc::test::hf_config {
namespace {

// ../shared/configs' files as they are (the suite runs without ../shared).
const char* kLlamaMid = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 1024,
  "intermediate_size": 2816, "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 8,
  "vocab_size": 32000, "max_position_embeddings": 1024, "rms_norm_eps": 1e-06, "tie_word_embeddings": false,
  "hidden_act": "silu", "attention_bias": false, "mlp_bias": false, "torch_dtype": "float32"})";
const char* kMixtral = R"({"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
  "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
  "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2, "max_position_embeddings": 32768,
  "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "tie_word_embeddings": false, "hidden_act": "silu",
  "sliding_window": null, "router_aux_loss_coef": 0.02, "output_router_logits": false, "torch_dtype": "bfloat16"})";
const char* kDeepseekV3 = R"({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
  "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
  "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256, "routed_scaling_factor": 2.5, "kv_lora_rank": 512,
  "q_lora_rank": 1536, "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "topk_method": "noaux_tc",
  "n_group": 8, "topk_group": 4, "num_experts_per_tok": 8, "moe_layer_freq": 1, "first_k_dense_replace": 3,
  "norm_topk_prob": true, "scoring_func": "sigmoid", "vocab_size": 129280, "max_position_embeddings": 163840,
  "tie_word_embeddings": false, "num_nextn_predict_layers": 1})";
const char* kGptOss120b = R"({"model_type": "gpt_oss", "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 36,
  "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "num_local_experts": 128, "num_experts_per_tok": 4,
  "vocab_size": 201088, "sliding_window": 128, "swiglu_limit": 7.0, "attention_bias": true, "tie_word_embeddings": false})";
const char* kTinyMixtral = R"({"model_type": "mixtral", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64, "num_local_experts": 4,
  "num_experts_per_tok": 2, "max_position_embeddings": 64})";

std::optional<DecoderConfig> read(const std::string& text, std::string* errors = nullptr) {
  DiagnosticEngine diags("config.json", text);
  auto c = readDecoderConfig(text, diags);
  if (errors)
    for (const Diagnostic& d : diags.diagnostics()) *errors += formatLoc(d.loc) + ": " + d.message + "\n";
  return c;
}

}  // namespace

TEST_CASE("config.json: parameters as torch counts them, active parameters as the model card gives them") {
  // ../shared/configs/README.md: llama_mid has 159,925,248 parameters as torch counts them.
  auto llama = read(kLlamaMid);
  REQUIRE(llama);
  CHECK(parameterCount(*llama) == 159925248);
  // Mixtral 8x7B's model card: 46.7 B parameters, 12.9 B active per token (rounded; the card
  // counts the input embedding whole, irc one row of it: 131 M less).
  auto mixtral = read(kMixtral);
  REQUIRE(mixtral);
  CHECK(mixtral->experts == 8);
  CHECK(std::abs(static_cast<double>(parameterCount(*mixtral)) / 46.7e9 - 1) < 0.025);
  CHECK(std::abs(static_cast<double>(activeParameterCount(*mixtral)) / 12.9e9 - 1) < 0.05);
  // Per layer by hand: attention 4096 x (4096 + 1024 + 1024) + 4096 x 4096, router 8 x 4096, two
  // norms, 8 experts of 3 x 4096 x 14336; embedding and head 32000 x 4096 each; the final norm.
  const int64_t layer = 4096LL * 6144 + 4096LL * 4096 + 8 * 4096 + 2 * 4096 + 8 * 3 * 4096LL * 14336;
  CHECK(parameterCount(*mixtral) == 32 * layer + 2 * 32000LL * 4096 + 4096);
}

TEST_CASE("config.json: DeepSeek-V3 (latent attention, shared experts, dense first layers) and GPT-OSS (biases, sinks)") {
  // DeepSeek-V3's card: 671 B parameters, 37 B activated. By hand, per layer: latent attention
  // 7168 x 1536 + 1536 + 1536 x 128 x 192 + 7168 x 576 + 512 + 512 x 128 x 256 + 128 x 128 x 7168;
  // 3 dense MLPs of 3 x 7168 x 18432; 58 MoE layers of 256 routed + 1 shared expert (3 x 7168 x
  // 2048 each) and a router of 256 x 7168; two norms a layer; embedding and head 129280 x 7168.
  auto ds = read(kDeepseekV3);
  REQUIRE(ds);
  const int64_t attention =
      7168LL * 1536 + 1536 + 1536LL * 128 * 192 + 7168LL * 576 + 512 + 512LL * 128 * 256 + 128LL * 128 * 7168;
  const int64_t expert = 3 * 7168LL * 2048;
  CHECK(parameterCount(*ds) ==
        61 * (attention + 2 * 7168) + 3 * 3 * 7168LL * 18432 + 58 * (257 * expert + 256 * 7168) + 2 * 129280LL * 7168 + 7168);
  CHECK(std::abs(static_cast<double>(parameterCount(*ds)) / 671e9 - 1) < 0.025);
  CHECK(std::abs(static_cast<double>(activeParameterCount(*ds)) / 37e9 - 1) < 0.05);
  // gpt-oss-120b's card: 116.8 B total, 5.1 B active.
  auto oss = read(kGptOss120b);
  REQUIRE(oss);
  CHECK(std::abs(static_cast<double>(parameterCount(*oss)) / 116.8e9 - 1) < 0.025);
  CHECK(std::abs(static_cast<double>(activeParameterCount(*oss)) / 5.1e9 - 1) < 0.05);
  CHECK(oss->slidingWindow == 128);
}

TEST_CASE("config.json: DeepSeek-V2 (latent attention, softmax routing, greedy or device-limited) counts as its cards") {
  // DeepSeek-V2-Lite's card: 15.7 B parameters, 2.4 B activated. By hand: attention (q_proj, no
  // query compression) 2048 x 16 x 192 + 2048 x 576 + 512 + 512 x 16 x 256 + 16 x 128 x 2048; one
  // dense MLP of 3 x 2048 x 10944; 26 MoE layers of 64 routed + 2 shared experts (3 x 2048 x 1408
  // each) and a router of 64 x 2048; two norms a layer; embedding and head 102400 x 2048.
  auto lite = read(R"({"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
  "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
  "n_shared_experts": 2, "n_routed_experts": 64, "routed_scaling_factor": 1.0, "kv_lora_rank": 512, "q_lora_rank": null,
  "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "topk_method": "greedy", "n_group": 1,
  "topk_group": 1, "num_experts_per_tok": 6, "moe_layer_freq": 1, "first_k_dense_replace": 1, "norm_topk_prob": false,
  "scoring_func": "softmax", "vocab_size": 102400, "tie_word_embeddings": false})");
  REQUIRE(lite);
  CHECK(lite->routing == Routing::SoftmaxTopK);
  CHECK_FALSE(lite->normTopK);
  const int64_t attention = 2048LL * 16 * 192 + 2048LL * 576 + 512 + 512LL * 16 * 256 + 16LL * 128 * 2048;
  const int64_t expert = 3 * 2048LL * 1408;
  CHECK(parameterCount(*lite) ==
        27 * (attention + 2 * 2048) + 3 * 2048LL * 10944 + 26 * (66 * expert + 64 * 2048) + 2 * 102400LL * 2048 + 2048);
  CHECK(std::abs(static_cast<double>(parameterCount(*lite)) / 15.7e9 - 1) < 0.025);
  CHECK(std::abs(static_cast<double>(activeParameterCount(*lite)) / 2.4e9 - 1) < 0.05);
  // DeepSeek-V2's card: 236 B parameters, 21 B activated; its device-limited routing.
  auto v2 = read(R"({"model_type": "deepseek_v2", "hidden_size": 5120, "intermediate_size": 12288,
  "moe_intermediate_size": 1536, "num_hidden_layers": 60, "num_attention_heads": 128, "num_key_value_heads": 128,
  "n_shared_experts": 2, "n_routed_experts": 160, "routed_scaling_factor": 16.0, "kv_lora_rank": 512, "q_lora_rank": 1536,
  "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "topk_method": "group_limited_greedy", "n_group": 8,
  "topk_group": 3, "num_experts_per_tok": 6, "moe_layer_freq": 1, "first_k_dense_replace": 1, "norm_topk_prob": false,
  "scoring_func": "softmax", "vocab_size": 102400, "tie_word_embeddings": false})");
  REQUIRE(v2);
  CHECK(v2->routing == Routing::SoftmaxGroupLimited);
  CHECK(v2->groups == 8);
  CHECK(std::abs(static_cast<double>(parameterCount(*v2)) / 236e9 - 1) < 0.025);
  CHECK(std::abs(static_cast<double>(activeParameterCount(*v2)) / 21e9 - 1) < 0.05);
  std::string errors;
  CHECK_FALSE(read(R"({"model_type": "deepseek_v2", "hidden_size": 16, "intermediate_size": 16, "moe_intermediate_size": 8,
  "num_hidden_layers": 2, "num_attention_heads": 4, "n_routed_experts": 8, "kv_lora_rank": 8, "qk_rope_head_dim": 4,
  "v_head_dim": 4, "qk_nope_head_dim": 4, "num_experts_per_tok": 2, "vocab_size": 32, "topk_method": "noaux_tc"})",
                   &errors));
  CHECK(errors.find("topk_method") != std::string::npos);
  CHECK(errors.find("noaux_tc") != std::string::npos);
}

TEST_CASE("config.json: what is not built or not known is a located error naming the supported families") {
  std::string errors;
  CHECK_FALSE(read(R"({"model_type": "bloom", "hidden_size": 8})", &errors));
  CHECK(errors.find("1:16: model_type 'bloom' is not a family irc builds; supported: ") != std::string::npos);
  CHECK(errors.find(
            "granite, kimi_k2, llama, llama4, llama4_text, mistral, mixtral, olmoe, phi3, qwen2, qwen2_moe, qwen3, qwen3_moe") !=
        std::string::npos);
  errors.clear();
  CHECK_FALSE(read(R"({"model_type": "gemma3", "hidden_size": 8})", &errors));
  CHECK(errors.find("model_type 'gemma3' is not built yet (Gemma 3's vision tower") != std::string::npos);
  errors.clear();
  CHECK_FALSE(read(R"({"model_type": "qwen3_next"})", &errors));
  CHECK(errors.find("model_type 'qwen3_next' is not built yet (Qwen3-Next's linear attention layers)") != std::string::npos);
  errors.clear();
  // Not JSON, though yaml-cpp reads it: a trailing comma, a leading zero, a single quote; and a
  // key twice (Python's json and transformers keep the last, yaml-cpp the first).
  for (auto [text, said] : std::vector<std::pair<std::string, std::string>>{
           {R"({"model_type": "llama", "hidden_size": 64,})",
            "1:43: invalid JSON: syntax error while parsing object key - unexpected '}'"},
           {R"({"model_type": "llama", "hidden_size": 0256})",
            "1:43: invalid JSON: syntax error while parsing object - unexpected number literal"},
           {R"({'model_type': "llama"})", "1:2: invalid JSON: syntax error while parsing object key - invalid literal"},
           {R"({"model_type": "llama",
  "model_type": "mistral"})",
            "2:3: 'model_type' is given twice (first at 1:2)"}}) {
    CAPTURE(text);
    errors.clear();
    CHECK_FALSE(read(text, &errors));
    CHECK_MESSAGE(errors.find(said) != std::string::npos, errors);
  }
  errors.clear();
  // A JSON string is no number nor boolean, though it spells one (transformers' typed classes
  // refuse it; yaml-cpp alone would read "256" as 256 and "false" as false).
  CHECK_FALSE(read(R"({"model_type": "llama", "hidden_size": "64", "num_hidden_layers": 2, "num_attention_heads": 4,
  "vocab_size": 10, "intermediate_size": 8})",
                   &errors));
  CHECK(errors.find("1:40: hidden_size must be a number; got the string \"64\"") != std::string::npos);
  errors.clear();
  CHECK_FALSE(read(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
  "vocab_size": 10, "intermediate_size": 8, "attention_bias": "false"})",
                   &errors));
  CHECK(errors.find("2:63: attention_bias must be true or false; got the string \"false\"") != std::string::npos);
  errors.clear();
  CHECK_FALSE(read(R"({"model_type": "llama", "hidden_size": 64})", &errors));
  CHECK(errors.find("the config has no 'num_hidden_layers'") != std::string::npos);
  // Sizes past what any model has are refused before anything is built or counted (a fuzzer's
  // 10^9 layers would write a model of 10^11 ops; 4,096 experts of 2^20 x 2^20 overflow int64).
  errors.clear();
  CHECK_FALSE(read(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1000000000, "num_attention_heads": 4,
  "vocab_size": 10, "intermediate_size": 8})",
                   &errors));
  CHECK(errors.find("num_hidden_layers must be in 1 .. 1048576; got 1000000000") != std::string::npos);
  errors.clear();
  CHECK_FALSE(read(R"({"model_type": "mixtral", "hidden_size": 1048576, "num_hidden_layers": 4096, "num_attention_heads": 4096,
  "vocab_size": 1048576, "intermediate_size": 1048576, "num_local_experts": 4096, "num_experts_per_tok": 2})",
                   &errors));
  CHECK(errors.find("the config describes 5.54e+19 parameters; irc plans models of up to 9e15") != std::string::npos);
}

TEST_CASE("graph: config.json with MindFormers' degrees: a tiny Mixtral's experts over 4 ranks by AlltoAll, verified") {
  TempDir dir;
  writeFile(dir.path() + "/tiny.config.json", kTinyMixtral);
  writeFile(dir.path() + "/plan.yaml",
            "graph: tiny.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 4, data_parallel: 4, expert_parallel: 4, training: true}\n");
  RunResult compiled = runIrc({"plan.yaml"}, dir.path());
  REQUIRE(compiled.exitCode == 0);
  // Per layer one AlltoAll to the experts and one back.
  CHECK(compiled.err.find("inserted: 4 AlltoAll") != std::string::npos);
  CHECK(runIrc({"verify", "plan.yaml"}, dir.path()).exitCode == 0);
  // --torch-out writes DTensor's styles, not torchtitan's expert parallelism: it says so.
  RunResult torch = runIrc({"plan.yaml", "-q", "--torch-out", "plan.py"}, dir.path());
  CHECK(torch.err.find("model.layers.1.mlp.experts ('L1.gate_up'): its experts are split over 4 ranks by the expert dim") !=
        std::string::npos);
  CHECK(readFile(dir.path() + "/plan.py").find("# not expressible: model.layers.0.mlp.experts") != std::string::npos);
  CHECK(
      readFile(dir.path() + "/plan.py").find("# Module paths are those of the model transformers builds from the config.json") !=
      std::string::npos);
  // --mindspore-out calls no MindSpore primitive that does not exist: irc's MoE ops are comments.
  REQUIRE(runIrc({"plan.yaml", "-q", "--mindspore-out", "shard.py"}, dir.path()).exitCode == 0);
  std::string shard = readFile(dir.path() + "/shard.py");
  CHECK(shard.find("ops.MoeDispatch") == std::string::npos);
  CHECK(shard.find("# \"L0.dispatch\": MoeDispatch is irc's op, no MindSpore primitive") != std::string::npos);
  // DeepSeek's and GPT-OSS's blocks split every way the degrees allow, on every rank.
  writeFile(dir.path() + "/ds.config.json",
            R"({"model_type": "deepseek_v3", "hidden_size": 16, "intermediate_size": 16, "moe_intermediate_size": 8,
  "num_hidden_layers": 2, "num_attention_heads": 4, "n_shared_experts": 1, "n_routed_experts": 8, "routed_scaling_factor": 2.5,
  "kv_lora_rank": 8, "q_lora_rank": 8, "qk_rope_head_dim": 4, "v_head_dim": 4, "qk_nope_head_dim": 4, "n_group": 4,
  "topk_group": 2, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "vocab_size": 32})");
  writeFile(dir.path() + "/oss.config.json",
            R"({"model_type": "gpt_oss", "hidden_size": 16, "intermediate_size": 8, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4, "num_local_experts": 4, "num_experts_per_tok": 2,
  "vocab_size": 32, "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"]})");
  // DeepSeek-V2's device-limited routing: the 2 groups (of 4) holding the best experts.
  writeFile(dir.path() + "/v2.config.json",
            R"({"model_type": "deepseek_v2", "hidden_size": 16, "intermediate_size": 16, "moe_intermediate_size": 8,
  "num_hidden_layers": 2, "num_attention_heads": 4, "n_shared_experts": 2, "n_routed_experts": 8, "routed_scaling_factor": 16.0,
  "kv_lora_rank": 8, "q_lora_rank": null, "qk_rope_head_dim": 4, "v_head_dim": 4, "qk_nope_head_dim": 4, "n_group": 4,
  "topk_group": 2, "topk_method": "group_limited_greedy", "num_experts_per_tok": 2, "first_k_dense_replace": 1,
  "vocab_size": 32})");
  // GPT-NeoX: the fused per-head qkv split over TP by whole heads, partial rotary, the parallel residual.
  writeFile(dir.path() + "/neox.config.json",
            R"({"model_type": "gpt_neox", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "rotary_pct": 0.5, "vocab_size": 32})");
  for (const char* degrees :
       {"data_parallel: 2, model_parallel: 2", "data_parallel: 2, model_parallel: 2, sequence_parallel: true",
        "data_parallel: 2, pipeline_stages: 2, micro_batches: 2"}) {
    writeFile(dir.path() + "/v.yaml", std::string("graph: neox.config.json\ndims: {batch: 4, sequence: 8}\n") +
                                          "parallel: {device_num: 4, training: true, " + degrees + "}\n");
    RunResult v = runIrc({"verify", "v.yaml"}, dir.path());
    CHECK_MESSAGE(v.exitCode == 0, "neox ", degrees, ": ", v.err);
  }
  // The parallel residual: the MLP's norm reads the layer's input, and both blocks add to it.
  REQUIRE(
      runIrc({"import", "neox.config.json", "-o", "neox.yaml", "--dim", "batch=4", "--dim", "sequence=8"}, dir.path()).exitCode ==
      0);
  const std::string neox = readFile(dir.path() + "/neox.yaml");
  CHECK(
      neox.find("name: L0.post_norm, type: LayerNorm, inputs: [embed_flat, gpt_neox.layers.0.post_attention_layernorm.weight") !=
      std::string::npos);
  CHECK(neox.find("name: L0.residual_attn, type: Add, inputs: [embed_flat, L0.o_proj_bias]") != std::string::npos);
  CHECK(neox.find("name: L1.input_norm, type: LayerNorm, inputs: [L0.residual_mlp,") != std::string::npos);
  // Rotary on the first 2 of each head's 4 dims; v unrotated, the third of each head's rows.
  CHECK(neox.find("name: L0.q_rope.rot, type: Slice, inputs: [L0.q_t, [0, 0, 0, 0], [4, 4, 8, 2]]") != std::string::npos);
  CHECK(neox.find("name: L0.v_t, type: Slice, inputs: [L0.qkv_t, [0, 0, 0, 8], [4, 4, 8, 4]]") != std::string::npos);
  for (const char* model : {"ds", "oss", "v2"})
    for (const char* degrees : {"data_parallel: 2, model_parallel: 2, expert_parallel: 2",
                                "data_parallel: 2, model_parallel: 2, expert_parallel: 2, sequence_parallel: true",
                                "data_parallel: 2, expert_parallel: 2, pipeline_stages: 2, micro_batches: 2"}) {
      writeFile(dir.path() + "/v.yaml", std::string("graph: ") + model + ".config.json\ndims: {batch: 4, sequence: 8}\n" +
                                            "parallel: {device_num: 4, training: true, " + degrees + "}\n");
      RunResult v = runIrc({"verify", "v.yaml"}, dir.path());
      CHECK_MESSAGE(v.exitCode == 0, model, " ", degrees, ": ", v.err);
      // The sliding layer's window (4) is shorter than the sequence (8): built, not warned of.
      CHECK(v.err.find("window") == std::string::npos);
    }
  // GPT-OSS's sliding layer (layer 0) reads the last 4 keys up to a query, its full layer all up
  // to it (causal).
  REQUIRE(
      runIrc({"import", "oss.config.json", "-o", "oss.yaml", "--dim", "batch=4", "--dim", "sequence=8"}, dir.path()).exitCode ==
      0);
  const std::string ossModel = readFile(dir.path() + "/oss.yaml");
  CHECK(ossModel.find("name: L0.scores, type: BatchMatMul, inputs: [L0.q_rope, L0.k_rep], attrs: {transpose_b: true, causal: "
                      "true, window: 4}") != std::string::npos);
  CHECK(ossModel.find("name: L0.context, type: BatchMatMul, inputs: [L0.probs, L0.v_rep], attrs: {causal: true, window: 4}") !=
        std::string::npos);
  CHECK(ossModel.find(
            "name: L1.scores, type: BatchMatMul, inputs: [L1.q_rope, L1.k_rep], attrs: {transpose_b: true, causal: true}") !=
        std::string::npos);
  // The config itself, as an ONNX graph is given: data parallel over --device-num.
  RunResult direct =
      runIrc({"verify", "tiny.config.json", "--device-num", "4", "--dim", "batch=4", "--dim", "sequence=8"}, dir.path());
  CHECK(direct.exitCode == 0);
  CHECK(direct.out.find("all 4 ranks agree") != std::string::npos);
  CHECK(runIrc({"tiny.config.json", "--dim", "foo=3"}, dir.path())
            .err.find("--dim foo: a config.json model has the dims batch and sequence") != std::string::npos);
  // The module paths transformers gives: recompute and stages globs find them.
  RunResult imported = runIrc({"import", "tiny.config.json", "--dim", "batch=2", "--dim", "sequence=8"}, dir.path());
  REQUIRE(imported.exitCode == 0);
  CHECK(imported.out.find("type: MoeDispatch, inputs: [L1.tokens, L1.route_experts], attrs: {num_experts: 4, capacity: 4}, "
                          "module: model.layers.1.mlp.experts}") != std::string::npos);

  // MindSpore's capacity factor: each expert's slots 1.5 x its balanced share (8 tokens x 2
  // choices / 4 experts = 4 -> 6); verified with the drops it makes.
  writeFile(dir.path() + "/capacity.yaml",
            "graph: tiny.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 4, data_parallel: 4, expert_parallel: 4, training: true}\n"
            "moe: {capacity_factor: 1.5}\n");
  REQUIRE(runIrc({"capacity.yaml", "-q", "--dump-after", "parse", "--dump-dir", "cap"}, dir.path()).exitCode == 0);
  CHECK(readFile(dir.path() + "/cap/rank_0/parse_0000.ir").find("capacity: 6, in_strategy") != std::string::npos);
  CHECK(runIrc({"verify", "capacity.yaml"}, dir.path()).exitCode == 0);
  // A share that is not whole slots rounds up, as MindSpore's and GShard's capacity do: 1.3 x 4 =
  // 5.2 -> 6 slots (5 would drop a balanced expert's sixth choice).
  writeFile(dir.path() + "/capacity13.yaml",
            "graph: tiny.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 4, data_parallel: 4, expert_parallel: 4, training: true}\n"
            "moe: {capacity_factor: 1.3}\n");
  REQUIRE(runIrc({"capacity13.yaml", "-q", "--dump-after", "parse", "--dump-dir", "cap13"}, dir.path()).exitCode == 0);
  CHECK(readFile(dir.path() + "/cap13/rank_0/parse_0000.ir").find("capacity: 6, in_strategy") != std::string::npos);
  writeFile(dir.path() + "/both.yaml",
            "graph: tiny.config.json\nparallel: {device_num: 1}\nmoe: {capacity_factor: 1, imbalance: 2}\n");
  CHECK(runIrc({"both.yaml"}, dir.path()).err.find("both.yaml:3:38: error: moe gives both capacity_factor") != std::string::npos);

  // transformers 4.x's spelling of the MoE block names the same modules (it matched nothing).
  for (const char* glob : {"*.block_sparse_moe", "*.mlp"}) {
    writeFile(dir.path() + "/rc.yaml", std::string("graph: tiny.config.json\ndims: {batch: 4, sequence: 8}\n") +
                                           "parallel: {device_num: 1, training: true}\nrecompute: [\"" + glob + "\"]\n");
    RunResult rc = runIrc({"memory", "rc.yaml"}, dir.path());
    CHECK_MESSAGE(rc.exitCode == 0, rc.err);
    CHECK(rc.out.find("recomputed") != std::string::npos);
  }

  // Degrees the model or the devices do not allow: located at the key, naming the valid values.
  writeFile(dir.path() + "/bad.yaml",
            "graph: tiny.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 4, data_parallel: 4, expert_parallel: 3}\n");
  RunResult bad = runIrc({"bad.yaml"}, dir.path());
  CHECK(bad.exitCode == 1);
  CHECK(bad.err.find("bad.yaml:3:62: error: expert_parallel 3 does not divide the 4 experts; valid: 1, 2, 4") !=
        std::string::npos);
  writeFile(dir.path() + "/count.yaml",
            "graph: tiny.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 8, data_parallel: 2, model_parallel: 2}\n");
  RunResult count = runIrc({"count.yaml"}, dir.path());
  CHECK(count.exitCode == 1);
  CHECK(count.err.find("data_parallel 2 x model_parallel 2 x pipeline_stages 1 is 4 devices; device_num is 8 "
                       "(data_parallel 4 would fill them)") != std::string::npos);
}

TEST_CASE("graph: config.json with sequence parallelism: each row product reduce-scattered into the tokens, verified") {
  // Megatron's sequence parallelism: o_proj and down_proj reduce-scatter their partial sums over
  // the tokens (MindFormers' out_strategy ((dp * mp, 1),)); an AllReduce and a StridedSlice sent
  // each rank the whole sum to keep half of it. 2 layers x 2 row products: 4 ReduceScatter; the
  // one AllReduce left is the vocabulary-split embedding's.
  TempDir dir;
  writeFile(dir.path() + "/tiny.config.json",
            R"({"model_type": "llama", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64, "max_position_embeddings": 64})");
  writeFile(dir.path() + "/sp.yaml",
            "graph: tiny.config.json\ndims: {batch: 2, sequence: 8}\n"
            "parallel: {device_num: 4, training: true, data_parallel: 2, model_parallel: 2, "
            "sequence_parallel: true}\n");
  RunResult compiled = runIrc({"sp.yaml"}, dir.path());
  REQUIRE_MESSAGE(compiled.exitCode == 0, compiled.err);
  CHECK(compiled.err.find(" 1 AllReduce, ") != std::string::npos);
  CHECK(compiled.err.find(" 4 ReduceScatter, ") != std::string::npos);
  REQUIRE(runIrc({"sp.yaml", "--dump-after", "step_parallel_end", "--dump-dir", "d"}, dir.path()).exitCode == 0);
  const std::string dump = readFile(dir.path() + "/d/rank_0/step_parallel_end_0003.ir");
  for (const char* row :
       {"(L0.o_proj.forward_op.0) = ReduceScatter(", "(L1.down_proj.forward_op.0) = ReduceScatter(",
        // The norms run on each rank's tokens, weight included (the gathered
        // tokens kept for its gradient were 4 times a rank's), and each norm's
        // output is gathered once for the products that read it (q, k and v
        // each gathered their own copy when the weight was split).
        "(L1.input_norm) = Mul(%100, %101) {instance name: L1.input_norm} primitive_attrs: {in_strategy: ((4, 1), (1))}",
        "(L1.input_norm.gathered.forward_op.1) = AllGather(", "(L1.post_norm.gathered.forward_op.1) = AllGather("})
    CHECK_MESSAGE(dump.find(row) != std::string::npos, row);
  CHECK(compiled.err.find(" 4 AllGather, ") != std::string::npos);  // L0's post_norm, L1's two, the final norm's
  RunResult v = runIrc({"verify", "sp.yaml"}, dir.path());
  CHECK_MESSAGE(v.exitCode == 0, v.err);
}

TEST_CASE("graph: config.json with context_parallel: Llama 3's mesh [dp, cp, tp], keys and values gathered over CP, verified") {
  TempDir dir;
  writeFile(dir.path() + "/tiny.config.json",
            R"({"model_type": "llama", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64, "max_position_embeddings": 64})");
  struct Case {
    const char* degrees;
    int batch;
    const char* inserted;  // the summary's collectives: per layer one AllGather each for the keys and the values
  };
  for (const Case& c : {Case{"data_parallel: 2, context_parallel: 2", 2, "inserted: 4 AllGather, 4 Concat, 4 Split, "},
                        Case{"model_parallel: 2, context_parallel: 2", 1, "inserted: 4 AllGather, 5 AllReduce, "},
                        Case{"model_parallel: 2, context_parallel: 2, sequence_parallel: true", 1, "inserted: 8 AllGather, "}}) {
    CAPTURE(c.degrees);
    writeFile(dir.path() + "/cp.yaml", fmt::format("graph: tiny.config.json\ndims: {{batch: {}, sequence: 8}}\n"
                                                   "parallel: {{device_num: 4, training: true, {}}}\n",
                                                   c.batch, c.degrees));
    RunResult compiled = runIrc({"cp.yaml"}, dir.path());
    REQUIRE_MESSAGE(compiled.exitCode == 0, compiled.err);
    // No AlltoAll: the query, the rotary embedding and the context stay where the projections put them.
    CHECK_MESSAGE(compiled.err.find(c.inserted) != std::string::npos, compiled.err);
    CHECK(compiled.err.find("AlltoAll") == std::string::npos);
    RunResult v = runIrc({"verify", "cp.yaml"}, dir.path());
    CHECK_MESSAGE(v.exitCode == 0, v.err);
  }
  // What context parallelism needs: 2 x CP chunks of each sequence, one sequence per DP rank.
  auto error = [&](const std::string& dims, const std::string& degrees) {
    writeFile(dir.path() + "/bad.yaml",
              "graph: tiny.config.json\ndims: {" + dims + "}\nparallel: {device_num: 4, " + degrees + "}\n");
    RunResult r = runIrc({"bad.yaml"}, dir.path());
    CHECK(r.exitCode == 1);
    return r.err;
  };
  CHECK(error("batch: 1, sequence: 6", "model_parallel: 2, context_parallel: 2")
            .find("context_parallel 2 does not split each sequence's 6 tokens into 4 equal chunks (2 per context rank, for "
                  "causal balance); valid: 1, 3") != std::string::npos);
  CHECK(error("batch: 4, sequence: 8", "data_parallel: 2, context_parallel: 2")
            .find("context_parallel 2 splits each sequence, which needs one sequence per data-parallel rank in a micro-batch: "
                  "dims.batch 4 with data_parallel 2 (valid: dims.batch 2)") != std::string::npos);
}

TEST_CASE("graph: config.json with experts and context or expert tensor parallelism: Megatron's folding, verified") {
  TempDir dir;
  writeFile(dir.path() + "/tiny.config.json", kTinyMixtral);
  struct Case {
    const char* degrees;
    int batch;
    const char* inserted;     // the summary's collectives
    const char* gateUpRank0;  // rank 0's slice of layer 0's gate_up_proj [4, 64, 16]
  };
  // Expert tensor parallelism (model_parallel's by default, as Megatron-Core and MindFormers do):
  // each expert's FFN columns over the TP pair {0, 1}, its experts over the EP pair {0, 2}; per
  // layer the dispatched tokens go by one AlltoAll over EP and one AllGather over TP, come back
  // reduced over TP (AllReduce) and by one AlltoAll. Without it (expert_tensor_parallel: 1) the
  // experts are whole on each TP rank, which dispatches its own chunk of each sequence. With
  // context parallelism the dispatch groups are each rank's chunk, EP folded over DP x CP.
  for (const Case& c :
       {Case{"data_parallel: 2, model_parallel: 2, expert_parallel: 2", 4, "inserted: 4 AllGather, 5 AllReduce, 4 AlltoAll, ",
             "(2, 32, 16)> : has_default  # slice [0:2, 0:32, 0:16] of (4, 64, 16)"},
        Case{"data_parallel: 2, model_parallel: 2, expert_parallel: 2, expert_tensor_parallel: 1", 4,
             "inserted: 2 AllGather, 3 AllReduce, 4 AlltoAll, ", "(2, 64, 16)> : has_default  # slice [0:2, 0:64, 0:16]"},
        Case{"data_parallel: 2, context_parallel: 2, expert_parallel: 4", 2,
             "inserted: 4 AllGather, 4 AlltoAll, 4 Concat, 4 Split, 17 _MirrorOperator",
             "(1, 64, 16)> : has_default  # slice [0:1, 0:64, 0:16]"},
        Case{"context_parallel: 2, model_parallel: 2, expert_parallel: 2, sequence_parallel: true", 1, "4 AlltoAll",
             "(2, 32, 16)> : has_default  # slice [0:2, 0:32, 0:16]"}}) {
    CAPTURE(c.degrees);
    writeFile(dir.path() + "/moe.yaml", fmt::format("graph: tiny.config.json\ndims: {{batch: {}, sequence: 8}}\n"
                                                    "parallel: {{device_num: 4, training: true, {}}}\n",
                                                    c.batch, c.degrees));
    RunResult compiled = runIrc({"moe.yaml", "--dump-all", "--dump-dir", "d"}, dir.path());
    REQUIRE_MESSAGE(compiled.exitCode == 0, compiled.err);
    CHECK_MESSAGE(compiled.err.find(c.inserted) != std::string::npos, compiled.err);
    std::string sliced = readFile(dir.path() + "/d/rank_0/validate_0004.ir");
    CHECK(sliced.find(std::string("%para12_model.layers.0.mlp.experts.gate_up_proj: <Tensor[Float32], ") + c.gateUpRank0) !=
          std::string::npos);
    RunResult v = runIrc({"verify", "moe.yaml"}, dir.path());
    CHECK_MESSAGE(v.exitCode == 0, v.err);
  }
  // The groups of the first case: EP over {0, 2}, TP over {0, 1}.
  writeFile(dir.path() + "/etp.yaml",
            "graph: tiny.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 4, training: true, data_parallel: 2, model_parallel: 2, expert_parallel: 2}\n");
  REQUIRE(runIrc({"etp.yaml", "-q", "--dump-all", "--dump-dir", "e"}, dir.path()).exitCode == 0);
  std::string plan = readFile(dir.path() + "/e/rank_0/step_parallel_end_0003.ir");
  CHECK(plan.find("= AlltoAll(%97) {instance name: redistribution_op_L0.dispatch_L0.gate_up_1AlltoAll} primitive_attrs: "
                  "{concat_dim: 0, group: 2-5208665662337742843, group_ranks: 0-2") != std::string::npos);
  CHECK(plan.find("= AllGather(%98) {instance name: redistribution_op_L0.dispatch_L0.gate_up_2AllGather} primitive_attrs: "
                  "{group: 2-5004544844489628105, group_ranks: 0-1") != std::string::npos);
  // --torch-out writes neither split of the experts, and says so (an expert split only by its
  // features was left out silently).
  writeFile(dir.path() + "/etp_only.yaml",
            "graph: tiny.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 2, training: true, model_parallel: 2}\n");
  RunResult torch = runIrc({"etp_only.yaml", "-q", "--torch-out", "etp.py"}, dir.path());
  REQUIRE(torch.exitCode == 0);
  CHECK(torch.err.find("model.layers.0.mlp.experts ('L0.gate_up'): each expert's weights are split on their features (expert "
                       "tensor parallelism: torchtitan's TensorParallel on its GroupedExperts), which this file does not "
                       "write; left replicated") != std::string::npos);

  auto error = [&](const std::string& degrees, int devices = 4) {
    writeFile(dir.path() + "/bad.yaml", fmt::format("graph: tiny.config.json\ndims: {{batch: 4, sequence: 8}}\n"
                                                    "parallel: {{device_num: {}, {}}}\n",
                                                    devices, degrees));
    RunResult r = runIrc({"bad.yaml"}, dir.path());
    CHECK(r.exitCode == 1);
    return r.err;
  };
  CHECK(error("data_parallel: 1, model_parallel: 4, expert_tensor_parallel: 2")
            .find("bad.yaml:3:88: error: expert_tensor_parallel 2: irc splits the experts' FFN over all the model-parallel "
                  "ranks (model_parallel 4) or none; valid: 1, 4") != std::string::npos);
  CHECK(error("data_parallel: 4, expert_tensor_parallel: 2")
            .find("expert_tensor_parallel 2: irc splits the experts' FFN over all the model-parallel ranks (model_parallel 1) "
                  "or none; valid: 1\n") != std::string::npos);
  CHECK(
      error("data_parallel: 2, model_parallel: 2, expert_parallel: 4")
          .find("expert_parallel 4 does not divide data_parallel 2 (the experts' FFN split over model_parallel); valid: 1, 2, or "
                "expert_tensor_parallel: 1 to fold it over model_parallel too") != std::string::npos);
  // Without expert tensor parallelism EP folds over DP x TP.
  writeFile(dir.path() + "/good.yaml",
            "graph: tiny.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 4, data_parallel: 2, model_parallel: 2, expert_parallel: 4, expert_tensor_parallel: 1}\n");
  CHECK(runIrc({"good.yaml"}, dir.path()).exitCode == 0);
}

}  // namespace irc::test::hf_config

namespace irc::test::hf_config {

// Each family's count exact to the weight, written out by hand from its modeling file's modules
// (q/k/v/o projections with their biases and norms, the MLP or the experts with the router and
// shared expert, two norms a layer, embedding, head unless tied, the final norm), and within 1 %
// of its model card. A term left out (Qwen3's q/k norms: 2 x 128 a layer) changes the count.
TEST_CASE("config.json: every family's parameter count exact, by hand, and as its model card rounds it") {
  // Llama 3.2 1B (tied head): 1.24 B; the card's 1,235,814,400. One token reads one row of the
  // embedding, which is also the head: active counts the matrix once.
  auto tied = read(R"({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
  "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256, "tie_word_embeddings": true})");
  REQUIRE(tied);
  const int64_t tiedLayer = 2048LL * 2048 + 2 * 2048LL * 512 + 2048LL * 2048 + 3 * 2048LL * 8192 + 2 * 2048;
  CHECK(parameterCount(*tied) == 16 * tiedLayer + 128256LL * 2048 + 2048);
  CHECK(parameterCount(*tied) == 1235814400);
  CHECK(activeParameterCount(*tied) == parameterCount(*tied));
  // Mistral 7B v0.1: 7.24 B (7,241,732,096).
  auto mistral = read(R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
  "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000, "sliding_window": null})");
  REQUIRE(mistral);
  const int64_t mistralLayer = 4096LL * 4096 + 2 * 4096LL * 1024 + 4096LL * 4096 + 3 * 4096LL * 14336 + 2 * 4096;
  CHECK(parameterCount(*mistral) == 32 * mistralLayer + 2 * 32000LL * 4096 + 4096);
  CHECK(parameterCount(*mistral) == 7241732096);
  // Qwen2.5-7B: q/k/v with biases (Qwen2Attention), 7.61 B on the card.
  auto qwen2 = read(R"({"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
  "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": false,
  "sliding_window": 131072, "max_window_layers": 28, "use_sliding_window": false})");
  REQUIRE(qwen2);
  const int64_t qwen2Layer = 3584LL * 3584 + 3584 + 2 * (3584LL * 512 + 512) + 3584LL * 3584 + 3 * 3584LL * 18944 + 2 * 3584;
  CHECK(parameterCount(*qwen2) == 28 * qwen2Layer + 2 * 152064LL * 3584 + 3584);
  CHECK(std::abs(static_cast<double>(parameterCount(*qwen2)) / 7.61e9 - 1) < 0.01);
  // Qwen3-8B: q_norm and k_norm (RMSNorm over head_dim 128) in every layer, 8.2 B on the card.
  auto qwen3 = read(R"({"model_type": "qwen3", "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
  "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
  "tie_word_embeddings": false, "attention_bias": false})");
  REQUIRE(qwen3);
  const int64_t qwen3Layer = 4096LL * 4096 + 2 * 4096LL * 1024 + 4096LL * 4096 + 2 * 128 + 3 * 4096LL * 12288 + 2 * 4096;
  CHECK(parameterCount(*qwen3) == 36 * qwen3Layer + 2 * 151936LL * 4096 + 4096);
  CHECK(std::abs(static_cast<double>(parameterCount(*qwen3)) / 8.19e9 - 1) < 0.01);
  // Qwen3-30B-A3B: q/k norms, 128 experts of 768, top 8; 30.5 B, 3.3 B activated (the card counts
  // the embedding whole: 3.04 B + 151936 x 2048).
  auto qwen3Moe = read(R"({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
  "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
  "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
  "vocab_size": 151936, "tie_word_embeddings": false})");
  REQUIRE(qwen3Moe);
  const int64_t moeAttention = 2048LL * 4096 + 2 * 2048LL * 512 + 4096LL * 2048 + 2 * 128;
  const int64_t moeExpert = 3 * 2048LL * 768;
  CHECK(parameterCount(*qwen3Moe) == 48 * (moeAttention + 128 * 2048 + 128 * moeExpert + 2 * 2048) + 2 * 151936LL * 2048 + 2048);
  CHECK(activeParameterCount(*qwen3Moe) ==
        48 * (moeAttention + 128 * 2048 + 8 * moeExpert + 2 * 2048) + 2048 + 151936LL * 2048 + 2048);
  CHECK(std::abs(static_cast<double>(parameterCount(*qwen3Moe)) / 30.5e9 - 1) < 0.01);
  CHECK(std::abs(static_cast<double>(activeParameterCount(*qwen3Moe) + 151936LL * 2048) / 3.3e9 - 1) < 0.05);
  // Qwen1.5-MoE-A2.7B (qwen2_moe): 60 experts of 1408, top 4, a shared expert of 5632 with its
  // sigmoid gate (2048 -> 1), q/k/v biases; 14.3 B, 2.7 B activated (embedding whole).
  auto qwen2Moe = read(R"({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
  "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_hidden_layers": 24,
  "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 60, "num_experts_per_tok": 4,
  "decoder_sparse_step": 1, "vocab_size": 151936, "tie_word_embeddings": false})");
  REQUIRE(qwen2Moe);
  const int64_t q2Attention = 2048LL * 2048 + 2048 + 2 * (2048LL * 2048 + 2048) + 2048LL * 2048;
  const int64_t q2Shared = 3 * 2048LL * 5632 + 2048;
  CHECK(parameterCount(*qwen2Moe) ==
        24 * (q2Attention + 60 * 2048 + 60 * 3 * 2048LL * 1408 + q2Shared + 2 * 2048) + 2 * 151936LL * 2048 + 2048);
  CHECK(std::abs(static_cast<double>(parameterCount(*qwen2Moe)) / 14.3e9 - 1) < 0.01);
  CHECK(std::abs(static_cast<double>(activeParameterCount(*qwen2Moe) + 151936LL * 2048) / 2.7e9 - 1) < 0.01);
  // gpt-oss-120b: q/k/v/o with biases, a sink per head, a router with its bias, 128 experts whose
  // gate_up (2 x 2880) and down (2880) projections carry biases; 116.83 B, 5.13 B active.
  auto oss = read(kGptOss120b);
  REQUIRE(oss);
  const int64_t ossAttention = 2880LL * 4096 + 4096 + 2 * (2880LL * 512 + 512) + 4096LL * 2880 + 2880 + 64;
  const int64_t ossExpert = 3 * 2880LL * 2880 + 2 * 2880 + 2880;
  CHECK(parameterCount(*oss) == 36 * (ossAttention + 128 * 2880 + 128 + 128 * ossExpert + 2 * 2880) + 2 * 201088LL * 2880 + 2880);
  CHECK(activeParameterCount(*oss) ==
        36 * (ossAttention + 128 * 2880 + 128 + 4 * ossExpert + 2 * 2880) + 2880 + 201088LL * 2880 + 2880);
  CHECK(std::abs(static_cast<double>(parameterCount(*oss)) / 116.83e9 - 1) < 0.01);
}

// The 2025 families, each counted by hand from transformers' modules and held to its card.
TEST_CASE("config.json: Gemma 2 and 3, Phi-4, Granite, OLMoE and StarCoder2 counted by hand, exact") {
  // gemma-2-9b: four norms a layer (input, post_attention, pre_ and post_feedforward), GeGLU,
  // head_dim 256 on 3584 wide, a tied head: 9,241,705,984 (the card's 9.24 B).
  auto gemma2 = read(R"({"model_type": "gemma2", "hidden_size": 3584, "intermediate_size": 14336, "num_hidden_layers": 42,
  "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "vocab_size": 256000, "sliding_window": 4096,
  "query_pre_attn_scalar": 256, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0})");
  REQUIRE(gemma2);
  const int64_t gemma2Layer = 3584LL * 4096 + 2 * 3584LL * 2048 + 4096LL * 3584 + 3 * 3584LL * 14336 + 4 * 3584;
  CHECK(parameterCount(*gemma2) == 42 * gemma2Layer + 256000LL * 3584 + 3584);
  CHECK(parameterCount(*gemma2) == 9241705984);
  CHECK(activeParameterCount(*gemma2) == parameterCount(*gemma2));
  CHECK(gemma2->tiedEmbeddings);
  CHECK(gemma2->attentionSoftcap == 50.0);
  CHECK(gemma2->scoreScale == relative(1 / 16.0));
  // Every other layer local (Gemma2Config's layer_types): layers 0, 2, 4, ...
  CHECK(gemma2->slidingLayer[0]);
  CHECK_FALSE(gemma2->slidingLayer[1]);
  CHECK(std::count(gemma2->slidingLayer.begin(), gemma2->slidingLayer.end(), true) == 21);
  // gemma-3-1b (gemma3_text): per-head q/k norms over head_dim 256, five local layers of six, no
  // softcaps: 999,885,952.
  auto gemma3 = read(R"({"model_type": "gemma3_text", "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
  "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144, "sliding_window": 512,
  "sliding_window_pattern": 6, "query_pre_attn_scalar": 256})");
  REQUIRE(gemma3);
  const int64_t gemma3Layer = 1152LL * 1024 + 2 * 1152LL * 256 + 1024LL * 1152 + 2 * 256 + 3 * 1152LL * 6912 + 4 * 1152;
  CHECK(parameterCount(*gemma3) == 26 * gemma3Layer + 262144LL * 1152 + 1152);
  CHECK(parameterCount(*gemma3) == 999885952);
  CHECK(gemma3->attentionSoftcap == 0);
  CHECK(std::count(gemma3->slidingLayer.begin(), gemma3->slidingLayer.end(), true) == 22);  // 26 - layers 5, 11, 17, 23
  CHECK_FALSE(gemma3->slidingLayer[5]);
  // phi-4 (phi3): qkv_proj [(40 + 2 x 10) x 128, 5120] and gate_up_proj [2 x 17920, 5120], no
  // biases, untied: 14,659,507,200 (the card's 14.7 B).
  auto phi4 = read(R"({"model_type": "phi3", "hidden_size": 5120, "intermediate_size": 17920, "num_hidden_layers": 40,
  "num_attention_heads": 40, "num_key_value_heads": 10, "vocab_size": 100352, "sliding_window": null,
  "partial_rotary_factor": 1.0, "tie_word_embeddings": false})");
  REQUIRE(phi4);
  const int64_t phi4Layer = 60LL * 128 * 5120 + 5120LL * 5120 + 2 * 17920LL * 5120 + 17920LL * 5120 + 2 * 5120;
  CHECK(parameterCount(*phi4) == 40 * phi4Layer + 2 * 100352LL * 5120 + 5120);
  CHECK(parameterCount(*phi4) == 14659507200);
  // granite-3.1-8b: Llama's layer (the multipliers scale, they weigh nothing), a tied head:
  // 8,170,848,256 (the card's 8.17 B).
  auto granite = read(R"({"model_type": "granite", "hidden_size": 4096, "intermediate_size": 12800, "num_hidden_layers": 40,
  "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 49155, "tie_word_embeddings": true,
  "embedding_multiplier": 12.0, "residual_multiplier": 0.22, "attention_multiplier": 0.0078125, "logits_scaling": 16.0})");
  REQUIRE(granite);
  const int64_t graniteLayer = 2 * 4096LL * 4096 + 2 * 4096LL * 1024 + 3 * 4096LL * 12800 + 2 * 4096;
  CHECK(parameterCount(*granite) == 40 * graniteLayer + 49155LL * 4096 + 4096);
  CHECK(parameterCount(*granite) == 8170848256);
  CHECK(granite->scoreScale == 0.0078125);
  CHECK(granite->logitDivisor == 16.0);
  // OLMoE-1B-7B: q_norm over the whole query [2048] and k_norm over the keys [16 x 128], 64
  // experts of 1024, top 8: 6.92 B, 1.18 B active (the card's 6.9 B and 1.3 B with the embedding whole).
  auto olmoe = read(R"({"model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024, "num_hidden_layers": 16,
  "num_attention_heads": 16, "num_key_value_heads": 16, "num_experts": 64, "num_experts_per_tok": 8,
  "norm_topk_prob": false, "vocab_size": 50304, "tie_word_embeddings": false})");
  REQUIRE(olmoe);
  const int64_t olmoeAttention = 4 * 2048LL * 2048 + 2048 + 2048, olmoeExpert = 3 * 2048LL * 1024;
  CHECK(parameterCount(*olmoe) == 16 * (olmoeAttention + 64 * 2048 + 64 * olmoeExpert + 2 * 2048) + 2 * 50304LL * 2048 + 2048);
  CHECK(activeParameterCount(*olmoe) ==
        16 * (olmoeAttention + 64 * 2048 + 8 * olmoeExpert + 2 * 2048) + 2048 + 50304LL * 2048 + 2048);
  CHECK(parameterCount(*olmoe) == 6919161856);
  CHECK_FALSE(olmoe->normTopK);
  // starcoder2-3b: LayerNorms with biases, q/k/v/o and c_fc/c_proj with biases (use_bias), a GeLU
  // MLP of two matrices, a tied head (Starcoder2Config's default): 3,030,371,328 (the card's 3.03 B).
  auto starcoder2 = read(R"({"model_type": "starcoder2", "hidden_size": 3072, "intermediate_size": 12288,
  "num_hidden_layers": 30, "num_attention_heads": 24, "num_key_value_heads": 2, "vocab_size": 49152, "sliding_window": 4096,
  "use_bias": true, "norm_epsilon": 1e-05})");
  REQUIRE(starcoder2);
  const int64_t sc2Attention = 2 * 3072LL * 3072 + 2 * 3072LL * 256 + 3072 + 2 * 256 + 3072;
  const int64_t sc2Mlp = 2 * 3072LL * 12288 + 12288 + 3072;
  CHECK(parameterCount(*starcoder2) == 30 * (sc2Attention + sc2Mlp + 2 * 2 * 3072) + 49152LL * 3072 + 2 * 3072);
  CHECK(parameterCount(*starcoder2) == 3030371328);
  CHECK(starcoder2->tiedEmbeddings);
  // pythia-160m (EleutherAI's config.json): LayerNorms with biases, query_key_value [3h, h] and
  // dense with biases (attention_bias), dense_h_to_4h and dense_4h_to_h with biases, an untied
  // embed_out: 162,322,944, as transformers counts GPTNeoXForCausalLM's; rotary on 16 of 64 dims.
  auto pythia = read(R"({"architectures": ["GPTNeoXForCausalLM"], "hidden_act": "gelu", "hidden_size": 768,
  "intermediate_size": 3072, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048, "model_type": "gpt_neox",
  "num_attention_heads": 12, "num_hidden_layers": 12, "rotary_emb_base": 10000, "rotary_pct": 0.25,
  "tie_word_embeddings": false, "use_parallel_residual": true, "vocab_size": 50304})");
  REQUIRE(pythia);
  const int64_t neoxAttention = 768LL * 2304 + 2304 + 768LL * 768 + 768, neoxMlp = 2 * 768LL * 3072 + 3072 + 768;
  CHECK(parameterCount(*pythia) == 12 * (neoxAttention + neoxMlp + 2 * 2 * 768) + 2 * 50304LL * 768 + 2 * 768);
  CHECK(parameterCount(*pythia) == 162322944);
  CHECK(activeParameterCount(*pythia) == 162322944 - 50303LL * 768);
  CHECK(pythia->rotaryDim() == 16);
  CHECK(pythia->parallelResidual);
  CHECK(pythia->exactGelu);
}

TEST_CASE("config.json: as downloaded: quantization_config read and said, Kimi-K2, transformers 5's spellings, defaults") {
  // DeepSeek-V3 as published, its fp8 blocks read: the model loads, said once where the key is.
  std::string v3 = kDeepseekV3;
  v3.insert(v3.size() - 1, R"(, "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
  "weight_block_size": [128, 128]})");
  DiagnosticEngine diags("config.json", v3);
  auto quantized = readDecoderConfig(v3, diags);
  REQUIRE(quantized);
  REQUIRE(quantized->quantization);
  CHECK(quantized->quantization->format == "fp8 e4m3 in 128 x 128 blocks, a float32 scale each");
  REQUIRE(diags.diagnostics().size() == 1);
  CHECK(diags.diagnostics()[0].message.find("the checkpoint stores its weights as fp8 e4m3 in 128 x 128 blocks") !=
        std::string::npos);
  CHECK(formatLoc(diags.diagnostics()[0].loc) == "7:87");
  CHECK(parameterCount(*quantized) == parameterCount(*read(kDeepseekV3)));
  // GPT-OSS's mxfp4 experts.
  std::string oss = kGptOss120b;
  oss.insert(oss.size() - 1, R"(, "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn"],
  "quant_method": "mxfp4"})");
  auto ossQuantized = read(oss);
  REQUIRE(ossQuantized);
  CHECK(ossQuantized->quantization->method == "mxfp4");
  // Kimi-K2 is DeepSeek-V3's architecture under its own model_type.
  std::string kimi = kDeepseekV3;
  kimi.replace(kimi.find("\"deepseek_v3\""), 13, "\"kimi_k2\"");
  auto k2 = read(kimi);
  REQUIRE(k2);
  CHECK(k2->family == DecoderFamily::DeepseekV3);
  CHECK(parameterCount(*k2) == parameterCount(*read(kDeepseekV3)));
  // Qwen3-MoE as transformers 5 writes it (num_local_experts) counts as transformers 4's.
  const char* qwen3Moe = R"({"model_type": "qwen3_moe", "hidden_size": 64, "intermediate_size": 96,
  "moe_intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "head_dim": 16, "%s": 8, "num_experts_per_tok": 2, "vocab_size": 100})";
  auto spelled = [&](const std::string& key) {
    std::string t = qwen3Moe;
    return read(t.replace(t.find("%s"), 2, key));
  };
  auto v4 = spelled("num_experts"), v5 = spelled("num_local_experts");
  REQUIRE(v4);
  REQUIRE(v5);
  CHECK(v5->experts == 8);
  CHECK(parameterCount(*v5) == parameterCount(*v4));
  // Qwen2-MoE without shared_expert_intermediate_size: Qwen2MoeConfig's 5,632 (with its gate).
  auto shared = read(R"({"model_type": "qwen2_moe", "hidden_size": 64, "intermediate_size": 96,
  "moe_intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_experts": 4,
  "num_experts_per_tok": 2, "vocab_size": 100})");
  REQUIRE(shared);
  CHECK(shared->sharedExpertFfn == 5632);
  CHECK(shared->sharedExpertGate);
  // Qwen2's windows: none unless use_sliding_window (its default is false); with it, the layers
  // from max_window_layers on (Qwen2Config's layer_types).
  const char* qwen2 = R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 28,
  "num_attention_heads": 4, "vocab_size": 100, "sliding_window": 4096)";
  auto unwindowed = read(std::string(qwen2) + ", \"max_window_layers\": 20}");
  REQUIRE(unwindowed);
  CHECK(std::count(unwindowed->slidingLayer.begin(), unwindowed->slidingLayer.end(), true) == 0);
  auto all28 = read(std::string(qwen2) + ", \"use_sliding_window\": true, \"max_window_layers\": 28}");
  REQUIRE(all28);
  CHECK(std::count(all28->slidingLayer.begin(), all28->slidingLayer.end(), true) == 0);
  auto from20 = read(std::string(qwen2) + ", \"use_sliding_window\": true, \"max_window_layers\": 20}");
  REQUIRE(from20);
  CHECK(std::count(from20->slidingLayer.begin(), from20->slidingLayer.end(), true) == 8);
  CHECK(from20->slidingLayer[20]);
  CHECK_FALSE(from20->slidingLayer[19]);
}

// Each new family's blocks (Gemma's sandwich norms, offsets and softcaps; Granite's multipliers;
// OLMoE's wide q/k norms under TP) compile with Megatron's degrees and compute, on every rank,
// what the single device does.
TEST_CASE("graph: config.json's 2025 families on DP 2 x TP 2, verified on every rank") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> configs{
      {"gemma2", R"({"model_type": "gemma2", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 32, "sliding_window": 4,
  "query_pre_attn_scalar": 8})"},
      {"gemma3_text", R"({"model_type": "gemma3_text", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 32, "sliding_window": 4})"},
      {"granite", R"({"model_type": "granite", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 32, "embedding_multiplier": 12.0,
  "residual_multiplier": 0.22, "attention_multiplier": 0.25, "logits_scaling": 8.0})"},
      {"olmoe", R"({"model_type": "olmoe", "hidden_size": 16, "intermediate_size": 8, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_experts": 4, "num_experts_per_tok": 2, "vocab_size": 32})"},
      {"phi3", R"({"model_type": "phi3", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 32})"},
      {"starcoder2", R"({"model_type": "starcoder2", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 32, "sliding_window": 4})"}};
  for (const auto& [family, text] : configs) {
    CAPTURE(family);
    writeFile(dir.path() + "/" + family + ".config.json", text);
    writeFile(dir.path() + "/plan.yaml", "graph: " + family + ".config.json\ndims: {batch: 2, sequence: 8}\n" +
                                             "parallel: {device_num: 4, data_parallel: 2, model_parallel: 2}\n");
    RunResult verified = runIrc({"verify", "plan.yaml"}, dir.path());
    CHECK_MESSAGE(verified.exitCode == 0, verified.err);
  }
}

TEST_CASE("config.json: Falcon's three attention layouts and its layers counted by hand, exact") {
  // falcon-7b (tiiuae's config.json, as published: no max_position_embeddings, no ffn_hidden_size,
  // no tie_word_embeddings): multi-query, one LayerNorm for the parallel attention and MLP, no
  // biases, a tied head. query_key_value [h + 2 d, h], dense [h, h], the MLP 4 h wide:
  // 6,921,720,704 (the card's "7B").
  auto f7b = read(R"({"alibi": false, "architectures": ["FalconForCausalLM"], "bias": false, "hidden_size": 4544,
  "layer_norm_epsilon": 1e-05, "model_type": "falcon", "multi_query": true, "new_decoder_architecture": false,
  "num_attention_heads": 71, "num_hidden_layers": 32, "parallel_attn": true, "vocab_size": 65024})");
  REQUIRE(f7b);
  const int64_t h7 = 4544, d7 = 64;
  const int64_t layer7 = h7 * (h7 + 2 * d7) + h7 * h7 + 2 * h7 * 4 * h7 + 2 * h7;
  CHECK(parameterCount(*f7b) == 32 * layer7 + 65024 * h7 + 2 * h7);
  CHECK(parameterCount(*f7b) == 6921720704);
  CHECK(activeParameterCount(*f7b) == parameterCount(*f7b));  // the head is the embedding: every row read
  CHECK(f7b->kvHeads == 1);
  CHECK(f7b->sharedNorm);
  CHECK(f7b->tiedEmbeddings);
  CHECK(f7b->maxPositions == 2048);
  CHECK(f7b->exactGelu);
  // falcon-40b: the new decoder architecture, 8 key-value groups of 16 heads, ln_attn and ln_mlp
  // (num_ln_in_parallel_attn 2 by default).
  auto f40b = read(R"({"model_type": "falcon", "hidden_size": 8192, "num_attention_heads": 128, "num_kv_heads": 8,
  "num_hidden_layers": 60, "new_decoder_architecture": true, "vocab_size": 65024, "parallel_attn": true, "bias": false})");
  REQUIRE(f40b);
  const int64_t h40 = 8192, d40 = 64;
  const int64_t layer40 = h40 * (128 + 2 * 8) * d40 + h40 * h40 + 2 * h40 * 4 * h40 + 2 * 2 * h40;
  CHECK(parameterCount(*f40b) == 60 * layer40 + 65024 * h40 + 2 * h40);
  CHECK(f40b->kvHeads == 8);
  CHECK_FALSE(f40b->sharedNorm);
  CHECK(f40b->parallelResidual);
  // falcon-rw-1b: ALiBi, each head its own [q; k; v] (multi_query false), Llama's sequential
  // layer (parallel_attn false), biases everywhere; FalconConfig's n_layer and n_head spellings.
  auto rw = read(R"({"alibi": true, "bias": true, "hidden_size": 2048, "model_type": "falcon", "multi_query": false,
  "n_head": 32, "n_layer": 24, "parallel_attn": false, "vocab_size": 50304})");
  REQUIRE(rw);
  const int64_t hr = 2048;
  const int64_t layerRw = hr * 3 * hr + 3 * hr + hr * hr + hr + 2 * hr * 4 * hr + 4 * hr + hr + 2 * 2 * hr;
  CHECK(parameterCount(*rw) == 24 * layerRw + 50304 * hr + 2 * hr);
  CHECK(parameterCount(*rw) == 1311625216);
  CHECK(rw->kvHeads == 32);
  CHECK_FALSE(rw->rotary());
  CHECK_FALSE(rw->parallelResidual);
  // What FalconDecoderLayer cannot build is said where it is written.
  std::string errors;
  CHECK_FALSE(read(R"({"model_type": "falcon", "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
  "vocab_size": 32, "new_decoder_architecture": true, "parallel_attn": false})",
                   &errors));
  CHECK(errors.find("2:72: new_decoder_architecture builds its layers with parallel_attn: true only") != std::string::npos);
}

TEST_CASE("graph: config.json's Falcon layouts verified under TP, SP and PP; multi-query refuses TP by its one key head") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> configs{
      // Grouped (40B, 180B): the groups split over TP, each rank its groups' queries, keys and values.
      {"grouped", R"({"model_type": "falcon", "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_kv_heads": 2, "new_decoder_architecture": true, "vocab_size": 32})"},
      // Falcon 2 (11B): grouped with one LayerNorm, its own MLP width, an untied head.
      {"one_norm", R"({"model_type": "falcon", "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_kv_heads": 2, "new_decoder_architecture": true, "num_ln_in_parallel_attn": 1, "ffn_hidden_size": 24,
  "tie_word_embeddings": false, "vocab_size": 32})"},
      // RefinedWeb: ALiBi, per-head [q; k; v], the sequential layer, biases.
      {"rw", R"({"model_type": "falcon", "hidden_size": 16, "n_layer": 2, "n_head": 4, "multi_query": false,
  "parallel_attn": false, "alibi": true, "bias": true, "vocab_size": 32})"}};
  for (const auto& [layout, text] : configs)
    for (const char* degrees :
         {"data_parallel: 2, model_parallel: 2", "data_parallel: 2, model_parallel: 2, sequence_parallel: true",
          "data_parallel: 2, pipeline_stages: 2, micro_batches: 2"}) {
      CAPTURE(layout);
      CAPTURE(degrees);
      writeFile(dir.path() + "/" + layout + ".config.json", text);
      writeFile(dir.path() + "/v.yaml", "graph: " + layout + ".config.json\ndims: {batch: 4, sequence: 8}\n" +
                                            "parallel: {device_num: 4, training: true, " + degrees + "}\n");
      RunResult v = runIrc({"verify", "v.yaml"}, dir.path());
      CHECK_MESSAGE(v.exitCode == 0, v.err);
    }
  // The grouped layout as transformers views it: [.., groups, heads / groups + 2, d], the key
  // the group's next-to-last row, the value its last; ALiBi added to the scores before the scale.
  REQUIRE(
      runIrc({"import", "grouped.config.json", "-o", "g.yaml", "--dim", "batch=4", "--dim", "sequence=8"}, dir.path()).exitCode ==
      0);
  const std::string grouped = readFile(dir.path() + "/g.yaml");
  CHECK(grouped.find("name: L0.qkv_groups, type: Reshape, inputs: [L0.qkv_proj, [4, 8, 2, 4, 4]]") != std::string::npos);
  CHECK(grouped.find("name: L0.k_part, type: Slice, inputs: [L0.qkv_groups, [0, 0, 0, 2, 0], [4, 8, 2, 1, 4]]") !=
        std::string::npos);
  CHECK(grouped.find("name: L0.input_norm, type: LayerNorm, inputs: [embed_flat, transformer.h.0.ln_attn.weight") !=
        std::string::npos);
  CHECK(grouped.find("name: L0.post_norm, type: LayerNorm, inputs: [embed_flat, transformer.h.0.ln_mlp.weight") !=
        std::string::npos);
  REQUIRE(runIrc({"import", "rw.config.json", "-o", "rw.yaml", "--dim", "batch=4", "--dim", "sequence=8"}, dir.path()).exitCode ==
          0);
  const std::string rw = readFile(dir.path() + "/rw.yaml");
  CHECK(rw.find("{name: alibi, shape: [4, 4, 1, 8]") != std::string::npos);
  CHECK(rw.find("name: L0.scores, type: Add, inputs: [L0.scores_raw, alibi]") != std::string::npos);
  CHECK(rw.find("position_cos") == std::string::npos);
  CHECK(rw.find("name: L0.post_norm, type: LayerNorm, inputs: [L0.residual_attn, transformer.h.0.post_attention_layernorm") !=
        std::string::npos);
  // Multi-query (7B): one key head, which TP cannot split.
  writeFile(dir.path() + "/mqa.config.json", R"({"model_type": "falcon", "hidden_size": 16, "num_hidden_layers": 2,
  "num_attention_heads": 4, "vocab_size": 32})");
  writeFile(dir.path() + "/v.yaml",
            "graph: mqa.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 4, data_parallel: 2, model_parallel: 2}\n");
  RunResult tp = runIrc({"verify", "v.yaml"}, dir.path());
  CHECK(tp.exitCode == 1);
  CHECK(tp.err.find("model_parallel 2 does not divide the model's 1 key-value heads; valid: 1") != std::string::npos);
  writeFile(dir.path() + "/v.yaml",
            "graph: mqa.config.json\ndims: {batch: 4, sequence: 8}\n"
            "parallel: {device_num: 4, training: true, data_parallel: 4}\n");
  RunResult dp = runIrc({"verify", "v.yaml"}, dir.path());
  CHECK_MESSAGE(dp.exitCode == 0, dp.err);
}

// Llama 4 Scout's config.json as published (Llama4Config: the decoder's keys in text_config,
// attn_temperature_tuning written as 4, no_rope_layers an empty list, a 10,485,760-token context).
constexpr const char* kLlama4Scout = R"({"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
 "text_config": {"attention_bias": false, "attention_chunk_size": 8192, "attn_scale": 0.1, "attn_temperature_tuning": 4,
 "floor_scale": 8192, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "interleave_moe_layer_step": 1,
 "intermediate_size": 8192, "intermediate_size_mlp": 16384, "max_position_embeddings": 10485760, "model_type": "llama4_text",
 "no_rope_layers": [], "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48, "num_key_value_heads": 8,
 "num_local_experts": 16, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "use_qk_norm": true, "vocab_size": 202048},
 "tie_word_embeddings": false, "vision_config": {"hidden_size": 1408, "num_hidden_layers": 34, "intermediate_size": 5632}})";

TEST_CASE("config.json: Llama 4 Scout and Maverick as published: the text decoder counted by hand, its layers' kinds") {
  std::string said;
  auto scout = read(kLlama4Scout, &said);
  REQUIRE(scout);
  CHECK(said.find("the vision tower and its projector (vision_config) are not built") != std::string::npos);
  // Every layer MoE: 16 experts and a shared expert of 8,192 (SwiGLU: 3 h F each), the router
  // [16, h]; attention q and o [h, 40·128], k and v [h, 8·128]; two RMSNorms; an untied head.
  const int64_t h = 5120, expert = 3 * h * 8192;
  const int64_t attention = 2 * h * 40 * 128 + 2 * h * 8 * 128;
  const int64_t moeLayer = attention + 16 * h + 16 * expert + expert + 2 * h;
  CHECK(parameterCount(*scout) == 48 * moeLayer + 2 * 202048LL * h + h);
  CHECK(parameterCount(*scout) == 107769861120);  // the card's 109B with the vision tower
  // A token's: one routed expert and the shared one, its embedding row.
  const int64_t activeLayer = attention + 16 * h + 2 * expert + 2 * h;
  CHECK(activeParameterCount(*scout) == 48 * activeLayer + 202048LL * h + h + h);
  CHECK(activeParameterCount(*scout) == 16138414080);  // the card's 17B active
  CHECK(scout->temperatureTuning);
  // Rotary (and chunked, L2-normed) layers but every fourth; those NoPE and global.
  REQUIRE(scout->ropeLayer.size() == 48);
  CHECK(scout->ropeLayer[0]);
  CHECK_FALSE(scout->ropeLayer[3]);
  CHECK(scout->chunkedLayer[2]);
  CHECK_FALSE(scout->chunkedLayer[47]);
  CHECK(scout->attentionChunk == 8192);
  CHECK(scout->l2QkNorm);
  // Maverick: 128 experts on every other layer (interleave_moe_layer_step 2: layers 1, 3, ...),
  // dense layers of intermediate_size_mlp between; no qk norm. 400B total, 17B active.
  std::string maverick = kLlama4Scout;
  for (auto [from, to] :
       std::vector<std::pair<std::string, std::string>>{{"\"interleave_moe_layer_step\": 1", "\"interleave_moe_layer_step\": 2"},
                                                        {"\"num_local_experts\": 16", "\"num_local_experts\": 128"},
                                                        {"\"use_qk_norm\": true", "\"use_qk_norm\": false"}})
    maverick.replace(maverick.find(from), from.size(), to);
  auto m = read(maverick);
  REQUIRE(m);
  const int64_t dense = attention + 3 * h * 16384 + 2 * h, sparse = attention + 128 * h + 128 * expert + expert + 2 * h;
  CHECK(parameterCount(*m) == 24 * (dense + sparse) + 2 * 202048LL * h + h);
  CHECK(parameterCount(*m) == 400711848960);
  CHECK(activeParameterCount(*m) == 24 * dense + 24 * (attention + 128 * h + 2 * expert + 2 * h) + 202048LL * h + 2 * h);
  CHECK_FALSE(m->sparseLayer[0]);
  CHECK(m->sparseLayer[1]);
  CHECK_FALSE(m->l2QkNorm);
  // Llama4ForCausalLM's own config (llama4_text) reads as the nested one.
  auto text = read(R"({"model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192, "head_dim": 128,
  "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 202048})");
  REQUIRE(text);
  CHECK(parameterCount(*text) == parameterCount(*scout));
  // What irc's dispatch cannot carry is said: each expert's input scaled by its own score.
  std::string errors;
  CHECK_FALSE(read(R"({"model_type": "llama4_text", "hidden_size": 16, "intermediate_size": 8, "num_hidden_layers": 2,
  "num_attention_heads": 4, "vocab_size": 32, "num_experts_per_tok": 2})",
                   &errors));
  CHECK(errors.find("num_experts_per_tok 2: irc builds Llama 4's input-scaled routing for one expert a token") !=
        std::string::npos);
}

TEST_CASE("graph: config.json's Llama 4: chunked rotary and NoPE layers, interleaved experts, verified under TP, EP, SP and PP") {
  TempDir dir;
  writeFile(dir.path() + "/l4.config.json", R"({"model_type": "llama4", "vision_config": {"hidden_size": 8},
  "text_config": {"hidden_size": 16, "intermediate_size": 8, "intermediate_size_mlp": 32, "num_hidden_layers": 4,
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 4, "vocab_size": 32, "num_local_experts": 4,
  "interleave_moe_layer_step": 2, "no_rope_layer_interval": 2, "attention_chunk_size": 4}})");
  for (const char* degrees : {"data_parallel: 2, model_parallel: 2, expert_parallel: 2",
                              "data_parallel: 2, model_parallel: 2, expert_parallel: 2, sequence_parallel: true",
                              "data_parallel: 2, expert_parallel: 2, pipeline_stages: 2, micro_batches: 2"}) {
    CAPTURE(degrees);
    writeFile(dir.path() + "/v.yaml", std::string("graph: l4.config.json\ndims: {batch: 4, sequence: 8}\n") +
                                          "parallel: {device_num: 4, training: true, " + degrees + "}\n");
    RunResult v = runIrc({"verify", "v.yaml"}, dir.path());
    CHECK_MESSAGE(v.exitCode == 0, v.err);
  }
  REQUIRE(runIrc({"import", "l4.config.json", "-o", "l4.yaml", "--dim", "batch=4", "--dim", "sequence=8"}, dir.path()).exitCode ==
          0);
  const std::string l4 = readFile(dir.path() + "/l4.yaml");
  // Layer 0: rotary, its queries L2-normed, its attention in chunks of 4; layer 1: NoPE, global,
  // its queries scaled by position; its MoE scales the token by the expert's score before it.
  CHECK(l4.find("name: L0.scores, type: BatchMatMul, inputs: [L0.q_l2norm, L0.k_rep], attrs: {transpose_b: true, causal: "
                "true, chunk: 4}") != std::string::npos);
  CHECK(l4.find("name: L1.scores, type: BatchMatMul, inputs: [L1.q_scaled, L1.k_rep], attrs: {transpose_b: true, causal: "
                "true}") != std::string::npos);
  CHECK(l4.find("name: L1.q_scaled, type: Mul, inputs: [L1.q_t, attention_scales]") != std::string::npos);
  CHECK(l4.find("L1.k_rope") == std::string::npos);
  CHECK(l4.find("name: L1.topk_scores, type: Sigmoid, inputs: [L1.topk:0], module: model.layers.1.feed_forward.router") !=
        std::string::npos);
  CHECK(l4.find("name: L1.tokens, type: Reshape, inputs: [L1.routed_in, [4, 8, 16]]") != std::string::npos);
  CHECK(l4.find("{name: model.layers.1.feed_forward.experts.gate_up_proj, shape: [4, 16, 16]") != std::string::npos);
  CHECK(l4.find("{name: model.layers.0.feed_forward.down_proj.weight, shape: [16, 32]") != std::string::npos);
}

}  // namespace irc::test::hf_config
