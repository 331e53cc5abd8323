#pragma once
// A generated transformer (pre-LayerNorm attention + MLP blocks, 25 ops a layer) in irc's YAML,
// for benchmarks: every layer configures its Q projection and its first MLP MatMul, Megatron
// style; everything else is left to propagation.
#include <cstdint>
#include <string>

namespace irc::bench {

struct TransformerSize {
  int64_t batch = 8, seq = 8, hidden = 64, heads = 4, mlp = 256;
  // A vocabulary: token ids in, an embedding lookup first and a logits MatMul last (a GPT).
  int64_t vocab = 0;
};
// search_mode auto's acceptance GPT: hidden 1024, 16 heads, MLP 4096, vocabulary 51200, batch 8
// x sequence 512.
constexpr TransformerSize kSearchSize{8, 512, 1024, 16, 4096, 51200};
// The sizes of `irc verify`'s benchmark (verify within 60 s and 2 GiB at these sizes): one sequence of 512 tokens, hidden 1024.
constexpr TransformerSize kVerifySize{1, 512, 1024, 16, 4096};

std::string transformerModel(int layers, int deviceNum);
// The configured MatMuls (q and h1 of every layer) split dp x mp: ((dp, 1), (1, mp)).
// With `configured` false no op has a strategy (for search_mode auto).
std::string transformerModel(int layers, int dp, int mp, const TransformerSize& size = {}, bool configured = true);
constexpr int kOpsPerLayer = 25;

}  // namespace irc::bench
