#pragma once
// A generated transformer (pre-LayerNorm attention + MLP blocks, 25 ops a layer) in irc's YAML,
// for benchmarks: every layer configures its Q projection and its first MLP MatMul, Megatron
// style; everything else is left to propagation.
#include <cstdint>
#include <string>

namespace irc::bench {

struct TransformerSize {
  int64_t batch = 8, seq = 8, hidden = 64, heads = 4, mlp = 256;
};
// The sizes of `irc verify`'s benchmark (verify within 60 s and 2 GiB at these sizes): one sequence of 512 tokens, hidden 1024.
constexpr TransformerSize kVerifySize{1, 512, 1024, 16, 4096};

std::string transformerModel(int layers, int deviceNum);
// The configured MatMuls (q and h1 of every layer) split dp x mp: ((dp, 1), (1, mp)).
std::string transformerModel(int layers, int dp, int mp, const TransformerSize& size = {});
constexpr int kOpsPerLayer = 25;

}  // namespace irc::bench
