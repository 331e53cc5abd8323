#pragma once
// A generated transformer (pre-LayerNorm attention + MLP blocks, 25 ops a layer) in irc's YAML,
// for benchmarks: every layer configures its Q projection and its first MLP MatMul, Megatron
// style; everything else is left to propagation.
#include <string>

namespace irc::bench {

std::string transformerModel(int layers, int deviceNum);
// The same with the configured MatMuls (q and h1 of every layer) split dp x mp: ((dp, 1), (1, mp)).
std::string transformerModel(int layers, int dp, int mp);
constexpr int kOpsPerLayer = 25;

}  // namespace irc::bench
