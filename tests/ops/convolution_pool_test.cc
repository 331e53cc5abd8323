// Convolution (Conv1D/2D/3D) and pooling (MaxPool, AvgPool): shapes, kernels on hand-computed
// values, rules, and verify under batch and channel splits.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include "ops/op_defs.h"
#include "ops/op_rule.h"
#include "ops/reference_ops.h"
#include "ops/shape_inference.h"
#include "tests/approx.h"
#include "tests/ops/common.h"
#include "tests/pipeline_util.h"

namespace irc::test {

TEST_CASE("Conv2D: result shape with pads, strides and dilations; the kernel on hand-computed values") {
  // x: 1x1x3x3 = 1..9; w: 1x1x2x2 = [[1, 0], [0, -1]]; no padding: out[i][j] = x[i][j] - x[i+1][j+1] = -4.
  TensorValue x{{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}, w{{1, 1, 2, 2}, {1, 0, 0, -1}};
  auto out = evaluateOne("Conv2D", {x, w}, {}, {});
  REQUIRE(out.size() == 1);
  CHECK(out[0].shape == Shape{1, 1, 2, 2});
  CHECK(out[0].data == std::vector<double>{-4, -4, -4, -4});
  // Padding 1 on every side, stride 2: windows at (-1,-1), (-1,1), (1,-1), (1,1); a window
  // reads x[i][j] * 1 + x[i+1][j+1] * -1 with zero outside: -1, -3 + 0 ... computed by hand:
  // (-1,-1): 0 - x[0][0] = -1; (-1,1): 0 - x[0][2] = -3; (1,-1): 0 - x[2][0] = -7; (1,1): x[1][1] - x[2][2] = 5 - 9 = -4.
  auto padded = evaluateOne("Conv2D", {x, w}, {}, {{"pads", IntTuple{1, 1, 1, 1}}, {"strides", IntTuple{2, 2}}});
  CHECK(padded[0].shape == Shape{1, 1, 2, 2});
  CHECK(padded[0].data == std::vector<double>{-1, -3, -7, -4});
  // Dilation 2 on a 3x3 input with a 2x2 kernel: one window, x[0][0] - x[2][2] = -8.
  auto dilated = evaluateOne("Conv2D", {x, w}, {}, {{"dilations", IntTuple{2, 2}}});
  CHECK(dilated[0].data == std::vector<double>{-8});
  // Two groups of one channel each: each output channel sees only its own input channel.
  TensorValue x2{{1, 2, 1, 1}, {3, 5}}, w2{{2, 1, 1, 1}, {10, 100}};
  auto grouped = evaluateOne("Conv2D", {x2, w2}, {}, {{"group", int64_t{2}}});
  CHECK(grouped[0].data == std::vector<double>{30, 500});
  // Conv1D: x 1x1x4 = 1..4, w = [1, 1]: the sums of neighbours.
  auto one = evaluateOne("Conv1D", {TensorValue{{1, 1, 4}, {1, 2, 3, 4}}, TensorValue{{1, 1, 2}, {1, 1}}}, {}, {});
  CHECK(one[0].data == std::vector<double>{3, 5, 7});
}

TEST_CASE("MaxPool and AvgPool: windows, padding and ceil_mode on hand-computed values") {
  TensorValue x{{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  auto max = evaluateOne("MaxPool", {x}, {}, {{"kernel_size", IntTuple{2, 2}}});
  CHECK(max[0].shape == Shape{1, 1, 2, 2});
  CHECK(max[0].data == std::vector<double>{5, 6, 8, 9});
  // ResNet's stem pool: kernel 3, stride 2, pads 1: windows centred on (0,0), (0,2), (2,0), (2,2).
  auto stem = evaluateOne("MaxPool", {x}, {},
                          {{"kernel_size", IntTuple{3, 3}}, {"strides", IntTuple{2, 2}}, {"pads", IntTuple{1, 1, 1, 1}}});
  CHECK(stem[0].data == std::vector<double>{5, 6, 8, 9});
  // Mean of the 2x2 windows, stride 2 with ceil_mode: (1+2+4+5)/4, (3+6)/2, (7+8)/2, 9.
  auto avg = evaluateOne("AvgPool", {x}, {}, {{"kernel_size", IntTuple{2, 2}}, {"strides", IntTuple{2, 2}}, {"ceil_mode", true}});
  CHECK(avg[0].shape == Shape{1, 1, 2, 2});
  CHECK(avg[0].data == std::vector<double>{3, 4.5, 7.5, 9});
  // count_include_pad divides by the window including its padding: (0+0+0+1)/4 at the corner.
  auto withPad = evaluateOne("AvgPool", {x}, {},
                             {{"kernel_size", IntTuple{2, 2}}, {"pads", IntTuple{1, 1, 0, 0}}, {"count_include_pad", true}});
  CHECK(withPad[0].data.front() == 0.25);
}

TEST_CASE("Conv2D rule: batch and output channels pass through, input channels are a reduction, spatial dims replicated") {
  std::string inputs =
      "  - {name: x, shape: [8, 4, 6, 6], dtype: float32}\n  - {name: w, shape: [16, 4, 3, 3], dtype: float32}\n";
  Compiled c = compileAllRanks(oneOpModel(1, inputs, "{name: conv, type: Conv2D, inputs: [x, w]}"));
  REQUIRE(c.errors == "");
  CHECK(ruleOf(c.original, c.original.op(0))->print() ==
        "([i, j, l, m], [k, j, n, o])->([i, k, p, q]) reduction={j} replicated={l, m, n, o, p, q}");
  // Input channels split 2 ways: the output is partial and completed by an AllReduce.
  OpFacts f = opFacts(
      oneOpModel(8, inputs, "{name: conv, type: Conv2D, inputs: [x, w], in_strategy: [[2, 2, 1, 1], [2, 2, 1, 1]]}"), "conv");
  REQUIRE(f.errors == "");
  CHECK(f.inputSlices == std::vector<Shape>{{4, 2, 6, 6}, {8, 2, 3, 3}});
  CHECK(f.outputSlices == std::vector<Shape>{{4, 8, 4, 4}});
  CHECK(f.forward.size() == 1);
  CHECK(f.forward[0].rfind("AllReduce sum", 0) == 0);
  OpFacts spatial = opFacts(
      oneOpModel(2, inputs, "{name: conv, type: Conv2D, inputs: [x, w], in_strategy: [[1, 1, 2, 1], [1, 1, 1, 1]]}"), "conv");
  CHECK(spatial.errors.find("irc exchanges no halos") != std::string::npos);
}

TEST_CASE("a small CNN (Conv2D + BiasAdd + ReLU + MaxPool + AvgPool) verifies under batch, channel and input-channel splits") {
  std::string yaml =
      "parallel: {device_num: 8}\ninputs:\n  - {name: x, shape: [4, 4, 8, 8], dtype: float32}\n"
      "parameters:\n  - {name: w1, shape: [8, 4, 3, 3], dtype: float32}\n  - {name: b1, shape: [8], dtype: float32}\n"
      "  - {name: w2, shape: [8, 8, 1, 1], dtype: float32}\n"
      "ops:\n"
      "  - {name: conv1, type: Conv2D, inputs: [x, w1], attrs: {pads: [1, 1, 1, 1]}, in_strategy: [[2, 2, 1, 1], [2, 2, 1, 1]]}\n"
      "  - {name: bias1, type: BiasAdd, inputs: [conv1, b1]}\n"
      "  - {name: relu1, type: ReLU, inputs: [bias1]}\n"
      "  - {name: pool1, type: MaxPool, inputs: [relu1], attrs: {kernel_size: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1]}}\n"
      "  - {name: conv2, type: Conv2D, inputs: [pool1, w2], in_strategy: [[4, 2, 1, 1], [1, 2, 1, 1]]}\n"
      "  - {name: pool2, type: AvgPool, inputs: [conv2], attrs: {kernel_size: [2, 2], strides: [2, 2]}}\n"
      "outputs: [pool2]\n";
  checkVerifiesInBothModes(yaml);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("Pad: constant padding by (before, after) pairs; padded dims whole, the others split; verifies") {
  TensorValue x{{2, 2}, {1, 2, 3, 4}};
  auto out = evaluateOne("Pad", {x}, {}, {{"paddings", IntTuple{0, 1, 1, 0}}, {"value", 9.0}});
  CHECK(out[0].shape == Shape{3, 3});
  CHECK(out[0].data == std::vector<double>{9, 1, 2, 9, 3, 4, 9, 9, 9});
  Compiled c = compileAllRanks(oneOpModel(1, "  - {name: x, shape: [8, 16], dtype: float32}\n",
                                          "{name: p, type: Pad, inputs: [x], attrs: {paddings: [0, 0, 2, 3]}}"));
  REQUIRE(c.errors == "");
  CHECK(ruleOf(c.original, c.original.op(0))->print() == "([i, j])->([i, k]) replicated={j, k}");
  Compiled crop = compileAllRanks(oneOpModel(1, "  - {name: x, shape: [8, 16], dtype: float32}\n",
                                             "{name: p, type: Pad, inputs: [x], attrs: {paddings: [0, 0, -1, 0]}}"));
  CHECK(crop.errors.find("irc pads, it does not crop") != std::string::npos);
  checkVerifiesInBothModes(
      "parallel: {device_num: 4}\ninputs:\n  - {name: x, shape: [8, 6, 6], dtype: float32}\n"
      "ops:\n  - {name: r, type: ReLU, inputs: [x], in_strategy: [[4, 1, 1]]}\n"
      "  - {name: p, type: Pad, inputs: [r], attrs: {paddings: [0, 0, 1, 1, 1, 1]}}\n"
      "  - {name: s, type: Sigmoid, inputs: [p]}\n");
}

TEST_CASE("Pad: reflect, edge and wrap modes as numpy's np.pad; an unknown mode is an error; verifies split") {
  TensorValue x{{3}, {1, 2, 3}};
  auto pad = [&](const std::string& mode, IntTuple p) {
    return evaluateOne("Pad", {x}, {}, {{"paddings", p}, {"mode", mode}})[0].data;
  };
  // np.pad([1, 2, 3], (2, 3), mode=...)
  CHECK(pad("reflect", {2, 3}) == std::vector<double>{3, 2, 1, 2, 3, 2, 1, 2});
  CHECK(pad("edge", {2, 3}) == std::vector<double>{1, 1, 1, 2, 3, 3, 3, 3});
  CHECK(pad("wrap", {2, 3}) == std::vector<double>{2, 3, 1, 2, 3, 1, 2, 3});
  CHECK(pad("reflect", {5, 0}) == std::vector<double>{2, 1, 2, 3, 2, 1, 2, 3});  // wider than x: numpy repeats the mirror
  TensorValue m{{2, 2}, {1, 2, 3, 4}};
  CHECK(evaluateOne("Pad", {m}, {}, {{"paddings", IntTuple{1, 0, 0, 1}}, {"mode", std::string("edge")}})[0].data ==
        std::vector<double>{1, 2, 2, 1, 2, 2, 3, 4, 4});
  Compiled bad =
      compileAllRanks(oneOpModel(1, "  - {name: x, shape: [8, 16], dtype: float32}\n",
                                 "{name: p, type: Pad, inputs: [x], attrs: {paddings: [0, 0, 1, 0], mode: symmetric}}"));
  CHECK(bad.errors.find("mode 'symmetric' is not a padding mode; valid: constant, reflect, edge, wrap") != std::string::npos);
  for (const char* mode : {"reflect", "edge", "wrap"})
    checkVerifiesInBothModes(
        fmt::format("parallel: {{device_num: 4}}\ninputs:\n  - {{name: x, shape: [8, 6, 6], dtype: float32}}\n"
                    "ops:\n  - {{name: r, type: ReLU, inputs: [x], in_strategy: [[2, 2, 1]]}}\n"
                    "  - {{name: p, type: Pad, inputs: [r], attrs: {{paddings: [0, 0, 2, 1, 1, 1], mode: {}}}}}\n"
                    "  - {{name: s, type: Sigmoid, inputs: [p]}}\n",
                    mode));
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE(
    "Resize: nearest, linear and cubic on hand-computed values; kept dims pass through, resized ones stay whole; verifies") {
  TensorValue x{{1, 1, 1, 2}, {1, 3}};
  auto resize = [&](AttrMap attrs) {
    attrs["sizes"] = IntTuple{1, 1, 1, 4};
    return evaluateOne("Resize", {x}, {}, attrs)[0].data;
  };
  // half_pixel, 2 -> 4: the output centres fall at -0.25, 0.25, 0.75, 1.25 of the input.
  CHECK(resize({{"mode", std::string("nearest")}}) == std::vector<double>{1, 1, 3, 3});
  CHECK(resize({{"mode", std::string("linear")}}) == std::vector<double>{1, 1.5, 2.5, 3});  // the edges clamp
  // align_corners: 0, 1/3, 2/3, 1.
  auto corners = resize({{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("align_corners")}});
  CHECK(corners[1] == relative(1 + 2.0 / 3));
  CHECK(corners[3] == 3);
  // asymmetric nearest rounding down: 0, 0.5, 1, 1.5 -> 0, 0, 1, 1.
  CHECK(resize({{"coordinate_transformation_mode", std::string("asymmetric")}, {"nearest_mode", std::string("floor")}}) ==
        std::vector<double>{1, 1, 3, 3});
  // Cubic on a ramp 0..3: the same size is the identity; with a = -0.5 Keys' kernel reproduces a
  // line in the interior (the default -0.75, PyTorch's, does not).
  TensorValue ramp{{4}, {0, 1, 2, 3}};
  auto same = evaluateOne("Resize", {ramp}, {}, {{"sizes", IntTuple{4}}, {"mode", std::string("cubic")}})[0].data;
  CHECK(same == ramp.data);
  auto up =
      evaluateOne("Resize", {ramp}, {}, {{"sizes", IntTuple{8}}, {"mode", std::string("cubic")}, {"cubic_coeff_a", -0.5}})[0]
          .data;
  CHECK(up[3] == relative(1.25));  // centre (3 + 0.5) / 2 - 0.5
  CHECK(up[4] == relative(1.75));
  // a = -0.75 at x = 1.25 (r = 0.25 past input 1): Keys' weights -0.10546875, 0.87890625, 0.26171875,
  // -0.03515625 on inputs 0, 1, 2, 3 (they sum to 1).
  auto keys = evaluateOne("Resize", {ramp}, {}, {{"sizes", IntTuple{8}}, {"mode", std::string("cubic")}})[0].data;
  CHECK(keys[3] == relative(0.87890625 + 2 * 0.26171875 - 3 * 0.03515625));
  Compiled c = compileAllRanks(oneOpModel(1, "  - {name: x, shape: [2, 4, 8, 8], dtype: float32}\n",
                                          "{name: r, type: Resize, inputs: [x], attrs: {sizes: [2, 4, 16, 16], mode: linear}}"));
  REQUIRE(c.errors == "");
  CHECK(ruleOf(c.original, c.original.op(0))->print() == "([i, j, k, m])->([i, j, l, n]) replicated={k, l, m, n}");
  Compiled bad = compileAllRanks(oneOpModel(1, "  - {name: x, shape: [2, 4], dtype: float32}\n",
                                            "{name: r, type: Resize, inputs: [x], attrs: {sizes: [2, 8], mode: area}}"));
  CHECK(bad.errors.find("mode 'area'; valid: nearest, linear, cubic") != std::string::npos);
  for (const char* mode : {"nearest", "linear", "cubic"})
    checkVerifiesInBothModes(
        fmt::format("parallel: {{device_num: 4}}\ninputs:\n  - {{name: x, shape: [4, 8, 6, 6], dtype: float32}}\n"
                    "ops:\n  - {{name: a, type: ReLU, inputs: [x], in_strategy: [[2, 2, 1, 1]]}}\n"
                    "  - {{name: r, type: Resize, inputs: [a], attrs: {{sizes: [4, 8, 12, 9], mode: {}}}}}\n"
                    "  - {{name: s, type: Sigmoid, inputs: [r]}}\n",
                    mode));
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("ConvTranspose2D: shape and kernel on hand-computed values; input channels split make a partial sum; verifies") {
  // x 1x1x2x2 = [[1, 2], [3, 4]], w 1x1x2x2 of ones, stride 2: each input element becomes a 2x2 block.
  TensorValue x{{1, 1, 2, 2}, {1, 2, 3, 4}}, w{{1, 1, 2, 2}, {1, 1, 1, 1}};
  auto blocks = evaluateOne("ConvTranspose2D", {x, w}, {}, {{"strides", IntTuple{2, 2}}});
  CHECK(blocks[0].shape == Shape{1, 1, 4, 4});
  CHECK(blocks[0].data == std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // Stride 1: overlapping windows add up (the full convolution); pads 1 cut the border; output_padding widens.
  auto full = evaluateOne("ConvTranspose2D", {x, w}, {}, {});
  CHECK(full[0].data == std::vector<double>{1, 3, 2, 4, 10, 6, 3, 7, 4});
  auto cut = evaluateOne("ConvTranspose2D", {x, w}, {}, {{"pads", IntTuple{1, 1, 1, 1}}});
  CHECK(cut[0].data == std::vector<double>{10});
  auto wider = evaluateOne("ConvTranspose2D", {x, w}, {}, {{"strides", IntTuple{2, 2}}, {"output_padding", IntTuple{1, 0}}});
  CHECK(wider[0].shape == Shape{1, 1, 5, 4});
  // Groups: 2 input channels, one output channel per group.
  TensorValue x2{{1, 2, 1, 1}, {1, 2}}, w2{{2, 1, 1, 1}, {10, 100}};
  CHECK(evaluateOne("ConvTranspose2D", {x2, w2}, {}, {{"group", int64_t{2}}})[0].data == std::vector<double>{10, 200});
  Compiled c = compileAllRanks(
      oneOpModel(1, "  - {name: x, shape: [2, 8, 4, 4], dtype: float32}\n  - {name: w, shape: [8, 4, 2, 2], dtype: float32}\n",
                 "{name: t, type: ConvTranspose2D, inputs: [x, w], attrs: {strides: [2, 2]}}"));
  REQUIRE(c.errors == "");
  CHECK(ruleOf(c.original, c.original.op(0))->print() ==
        "([i, j, l, m], [j, k, n, o])->([i, k, p, q]) reduction={j} replicated={l, m, n, o, p, q}");
  // Batch and output channels split; input channels split (a partial sum completed by an AllReduce).
  for (const char* strategy : {"[[2, 1, 1, 1], [1, 2, 1, 1]]", "[[1, 4, 1, 1], [4, 1, 1, 1]]"})
    checkVerifiesInBothModes(
        fmt::format("parallel: {{device_num: 4}}\ninputs:\n  - {{name: x, shape: [4, 8, 4, 4], dtype: float32}}\n"
                    "parameters:\n  - {{name: w, shape: [8, 4, 3, 3], dtype: float32}}\n"
                    "ops:\n  - {{name: t, type: ConvTranspose2D, inputs: [x, w], in_strategy: {}, "
                    "attrs: {{strides: [2, 2], pads: [1, 1, 1, 1], output_padding: [1, 1]}}}}\n"
                    "  - {{name: s, type: Sigmoid, inputs: [t]}}\n",
                    strategy));
}

}  // namespace irc::test
