#include "tools/bench/transformer_model.h"

#include <cmath>

#include <fmt/format.h>

namespace irc::bench {

std::string transformerModel(int layers, int deviceNum) { return transformerModel(layers, 2, deviceNum / 2); }

std::string transformerModel(int layers, int dp, int mp, const TransformerSize& size, bool configured) {
  int deviceNum = dp * mp;
  int64_t tokens = size.batch * size.seq, head = size.hidden / size.heads;
  std::string h = std::to_string(size.hidden), f = std::to_string(size.mlp);
  std::string hh = "[" + h + ", " + h + "]";
  std::string split = fmt::format("[{}, {}, {}, {}]", size.batch, size.seq, size.heads, head);
  std::string params, ops;
  std::string x = "x";
  std::string strategy = configured ? fmt::format(", in_strategy: [[{}, 1], [1, {}]]", dp, mp) : "";
  std::string input = fmt::format("  - {{name: x, shape: [{}, {}], dtype: float32}}\n", tokens, h);
  if (size.vocab > 0) {
    input = fmt::format("  - {{name: tokens, shape: [{}], dtype: int32}}\n", tokens);
    params += fmt::format("  - {{name: wte, shape: [{}, {}], dtype: float32}}\n", size.vocab, h);
    ops += "  - {name: embed, type: Gather, inputs: [wte, tokens, 0]}\n";
    x = "embed";
  }
  for (int l = 0; l < layers; ++l) {
    auto p = [&](const char* name, const std::string& shape) {
      params += fmt::format("  - {{name: l{}.{}, shape: {}, dtype: float32}}\n", l, name, shape);
    };
    p("ln1.g", "[" + h + "]");
    p("ln1.b", "[" + h + "]");
    p("wq", hh);
    p("wk", hh);
    p("wv", hh);
    p("wo", hh);
    p("ln2.g", "[" + h + "]");
    p("ln2.b", "[" + h + "]");
    p("w1", "[" + h + ", " + f + "]");
    p("b1", "[" + f + "]");
    p("w2", "[" + f + ", " + h + "]");
    auto op = [&](const std::string& name, const std::string& body) {
      ops += fmt::format("  - {{name: l{}.{}, {}}}\n", l, name, body);
    };
    std::string L = fmt::format("l{}.", l);
    op("ln1", fmt::format("type: LayerNorm, inputs: [{}, {}ln1.g, {}ln1.b]", x, L, L));
    op("q", fmt::format("type: MatMul, inputs: [\"{}ln1:0\", {}wq]{}", L, L, strategy));
    op("k", fmt::format("type: MatMul, inputs: [\"{}ln1:0\", {}wk]", L, L));
    op("v", fmt::format("type: MatMul, inputs: [\"{}ln1:0\", {}wv]", L, L));
    op("qh", fmt::format("type: Reshape, inputs: [{}q, {}]", L, split));
    op("qt", fmt::format("type: Transpose, inputs: [{}qh, [0, 2, 1, 3]]", L));
    op("kh", fmt::format("type: Reshape, inputs: [{}k, {}]", L, split));
    op("kt", fmt::format("type: Transpose, inputs: [{}kh, [0, 2, 3, 1]]", L));
    op("scores", fmt::format("type: BatchMatMul, inputs: [{}qt, {}kt]", L, L));
    op("scaled", fmt::format("type: Mul, inputs: [{}scores, {}]", L, 1.0 / std::sqrt(static_cast<double>(head))));
    op("probs", fmt::format("type: Softmax, inputs: [{}scaled]", L));
    op("vh", fmt::format("type: Reshape, inputs: [{}v, {}]", L, split));
    op("vt", fmt::format("type: Transpose, inputs: [{}vh, [0, 2, 1, 3]]", L));
    op("ctx", fmt::format("type: BatchMatMul, inputs: [{}probs, {}vt]", L, L));
    op("ctxt", fmt::format("type: Transpose, inputs: [{}ctx, [0, 2, 1, 3]]", L));
    op("merged", fmt::format("type: Reshape, inputs: [{}ctxt, [{}, {}]]", L, tokens, h));
    op("o", fmt::format("type: MatMul, inputs: [{}merged, {}wo]", L, L));
    op("res1", fmt::format("type: Add, inputs: [{}, {}o]", x, L));
    op("ln2", fmt::format("type: LayerNorm, inputs: [{}res1, {}ln2.g, {}ln2.b]", L, L, L));
    op("h1", fmt::format("type: MatMul, inputs: [\"{}ln2:0\", {}w1]{}", L, L, strategy));
    op("h1b", fmt::format("type: Add, inputs: [{}h1, {}b1]", L, L));
    op("act", fmt::format("type: GeLU, inputs: [{}h1b]", L));
    op("h2", fmt::format("type: MatMul, inputs: [{}act, {}w2]", L, L));
    op("res2", fmt::format("type: Add, inputs: [{}res1, {}h2]", L, L));
    op("out", fmt::format("type: Neg, inputs: [{}res2]", L));
    x = L + "out";
  }
  if (size.vocab > 0) {
    params += fmt::format("  - {{name: lm_head, shape: [{}, {}], dtype: float32}}\n", h, size.vocab);
    ops += fmt::format("  - {{name: logits, type: MatMul, inputs: [{}, lm_head]{}}}\n", x, strategy);
    x = "logits";
  }
  return fmt::format("name: transformer_{}\nparallel: {{device_num: {}}}\ninputs:\n{}parameters:\n{}ops:\n{}outputs: [{}]\n",
                     layers, deviceNum, input, params, ops, x);
}

}  // namespace irc::bench
