#include "tools/bench/transformer_model.h"

#include <fmt/format.h>

namespace irc::bench {

std::string transformerModel(int layers, int deviceNum) { return transformerModel(layers, 2, deviceNum / 2); }

std::string transformerModel(int layers, int dp, int mp) {
  int deviceNum = dp * mp;
  // batch 8 x sequence 8 tokens, hidden 64, 4 heads of 16, MLP 256.
  std::string params, ops;
  std::string x = "x";
  for (int l = 0; l < layers; ++l) {
    auto p = [&](const char* name, const char* shape) {
      params += fmt::format("  - {{name: l{}.{}, shape: {}, dtype: float32}}\n", l, name, shape);
    };
    p("ln1.g", "[64]"); p("ln1.b", "[64]"); p("wq", "[64, 64]"); p("wk", "[64, 64]"); p("wv", "[64, 64]");
    p("wo", "[64, 64]"); p("ln2.g", "[64]"); p("ln2.b", "[64]"); p("w1", "[64, 256]"); p("b1", "[256]"); p("w2", "[256, 64]");
    auto op = [&](const std::string& name, const std::string& body) { ops += fmt::format("  - {{name: l{}.{}, {}}}\n", l, name, body); };
    std::string L = fmt::format("l{}.", l);
    op("ln1", fmt::format("type: LayerNorm, inputs: [{}, {}ln1.g, {}ln1.b]", x, L, L));
    op("q", fmt::format("type: MatMul, inputs: [\"{}ln1:0\", {}wq], in_strategy: [[{}, 1], [1, {}]]", L, L, dp, mp));
    op("k", fmt::format("type: MatMul, inputs: [\"{}ln1:0\", {}wk]", L, L));
    op("v", fmt::format("type: MatMul, inputs: [\"{}ln1:0\", {}wv]", L, L));
    op("qh", fmt::format("type: Reshape, inputs: [{}q, [8, 8, 4, 16]]", L));
    op("qt", fmt::format("type: Transpose, inputs: [{}qh, [0, 2, 1, 3]]", L));
    op("kh", fmt::format("type: Reshape, inputs: [{}k, [8, 8, 4, 16]]", L));
    op("kt", fmt::format("type: Transpose, inputs: [{}kh, [0, 2, 3, 1]]", L));
    op("scores", fmt::format("type: BatchMatMul, inputs: [{}qt, {}kt]", L, L));
    op("scaled", fmt::format("type: Mul, inputs: [{}scores, 0.25]", L));
    op("probs", fmt::format("type: Softmax, inputs: [{}scaled]", L));
    op("vh", fmt::format("type: Reshape, inputs: [{}v, [8, 8, 4, 16]]", L));
    op("vt", fmt::format("type: Transpose, inputs: [{}vh, [0, 2, 1, 3]]", L));
    op("ctx", fmt::format("type: BatchMatMul, inputs: [{}probs, {}vt]", L, L));
    op("ctxt", fmt::format("type: Transpose, inputs: [{}ctx, [0, 2, 1, 3]]", L));
    op("merged", fmt::format("type: Reshape, inputs: [{}ctxt, [64, 64]]", L));
    op("o", fmt::format("type: MatMul, inputs: [{}merged, {}wo]", L, L));
    op("res1", fmt::format("type: Add, inputs: [{}, {}o]", x, L));
    op("ln2", fmt::format("type: LayerNorm, inputs: [{}res1, {}ln2.g, {}ln2.b]", L, L, L));
    op("h1", fmt::format("type: MatMul, inputs: [\"{}ln2:0\", {}w1], in_strategy: [[{}, 1], [1, {}]]", L, L, dp, mp));
    op("h1b", fmt::format("type: Add, inputs: [{}h1, {}b1]", L, L));
    op("act", fmt::format("type: GeLU, inputs: [{}h1b]", L));
    op("h2", fmt::format("type: MatMul, inputs: [{}act, {}w2]", L, L));
    op("res2", fmt::format("type: Add, inputs: [{}res1, {}h2]", L, L));
    op("out", fmt::format("type: Neg, inputs: [{}res2]", L));
    x = L + "out";
  }
  return fmt::format("name: transformer_{}\nparallel: {{device_num: {}}}\ninputs:\n  - {{name: x, shape: [64, 64], dtype: float32}}\n"
                     "parameters:\n{}ops:\n{}outputs: [{}]\n",
                     layers, deviceNum, params, ops, x);
}

}  // namespace irc::bench
