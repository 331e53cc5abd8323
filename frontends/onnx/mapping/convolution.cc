#include "frontends/onnx/mapping/mapping_common.h"

namespace irc::onnx_import {
namespace {

// ---- convolution and pooling ----

// The pads of a Conv or pool node (the begins, then the ends): `pads`, or what `auto_pad` says
// (SAME_UPPER puts the odd one at the end, SAME_LOWER at the begin).
std::optional<IntTuple> padsOf(NodeMapping& m, const Shape& x, const IntTuple& kernel, const IntTuple& strides,
                               const IntTuple& dilations) {
  size_t spatial = kernel.size();
  std::string autoPad = m.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    IntTuple pads = m.intsAttr("pads").value_or(IntTuple(2 * spatial, 0));
    if (pads.size() != 2 * spatial) {
      m.error(fmt::format("has {} pads; {} spatial dims need {}", pads.size(), spatial, 2 * spatial));
      return std::nullopt;
    }
    return pads;
  }
  IntTuple pads(2 * spatial, 0);
  if (autoPad == "VALID") return pads;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER") {
    m.error(fmt::format("has auto_pad '{}'; valid: NOTSET, VALID, SAME_UPPER, SAME_LOWER", autoPad));
    return std::nullopt;
  }
  for (size_t d = 0; d < spatial; ++d) {
    int64_t in = x[d + 2], out = (in + strides[d] - 1) / strides[d];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1 - in);
    int64_t small = total / 2, large = total - small;
    pads[d] = autoPad == "SAME_UPPER" ? small : large;
    pads[d + spatial] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

// An ints attribute of one entry per spatial dim, 1 each when absent.
std::optional<IntTuple> spatialInts(NodeMapping& m, const char* name, size_t spatial) {
  IntTuple v = m.intsAttr(name).value_or(IntTuple(spatial, 1));
  if (v.size() != spatial) {
    m.error(fmt::format("has {} {}; {} spatial dims need {}", v.size(), name, spatial, spatial));
    return std::nullopt;
  }
  return v;
}

// Conv: Conv1D/2D/3D, then a BiasAdd of B (MindSpore's nn.Conv2d: Conv2D + BiasAdd).
Terms conv(NodeMapping& m) {
  auto x = need(m, 0), w = need(m, 1);
  if (!x || !w) return std::nullopt;
  Shape xs = shapeOf(m, *x), ws = shapeOf(m, *w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size()) {
    m.error(fmt::format("convolves x of shape {} with w of shape {}; irc maps 1 to 3 spatial dims, x and w of one rank",
                        formatShape(xs), formatShape(ws)));
    return std::nullopt;
  }
  size_t spatial = xs.size() - 2;
  IntTuple kernel(ws.begin() + 2, ws.end());
  auto strides = spatialInts(m, "strides", spatial), dilations = spatialInts(m, "dilations", spatial);
  if (!strides || !dilations) return std::nullopt;
  auto pads = padsOf(m, xs, kernel, *strides, *dilations);
  if (!pads) return std::nullopt;
  AttrMap attrs{{"strides", *strides}, {"dilations", *dilations}, {"pads", *pads}, {"group", m.intAttr("group", 1)}};
  auto b = m.input(2);
  auto y = m.emit1(fmt::format("Conv{}D", spatial), {*x, *w}, std::move(attrs), b ? "conv" : "");
  if (!y || !b) return one(y);
  return one(m.emit1("BiasAdd", {*y, *b}));
}

// ConvTranspose: ConvTranspose1D/2D/3D, then BiasAdd of B (as Conv). `output_shape` (or auto_pad
// SAME_*: the output is stride * input) fixes the pads ONNX's way: the total padding, split
// evenly with the odd one at the end for SAME_UPPER, at the begin otherwise.
Terms convTranspose(NodeMapping& m) {
  auto x = need(m, 0), w = need(m, 1);
  if (!x || !w) return std::nullopt;
  Shape xs = shapeOf(m, *x), ws = shapeOf(m, *w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size()) {
    m.error(
        fmt::format("transposes a convolution of x of shape {} with w of shape {}; irc maps 1 to 3 spatial dims, x and w of "
                    "one rank",
                    formatShape(xs), formatShape(ws)));
    return std::nullopt;
  }
  size_t spatial = xs.size() - 2;
  auto strides = spatialInts(m, "strides", spatial), dilations = spatialInts(m, "dilations", spatial);
  if (!strides || !dilations) return std::nullopt;
  IntTuple outputPadding = m.intsAttr("output_padding").value_or(IntTuple(spatial, 0));
  if (outputPadding.size() != spatial) {
    m.error(fmt::format("has {} output_padding entries; {} spatial dims need {}", outputPadding.size(), spatial, spatial));
    return std::nullopt;
  }
  std::string autoPad = m.stringAttr("auto_pad", "NOTSET");
  auto outputShape = m.intsAttr("output_shape");
  IntTuple pads = m.intsAttr("pads").value_or(IntTuple(2 * spatial, 0));
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    IntTuple target;
    if (outputShape) {
      // output_shape may give the spatial dims only, or N and C too.
      target = outputShape->size() == spatial + 2 ? IntTuple(outputShape->begin() + 2, outputShape->end()) : *outputShape;
    } else {
      for (size_t d = 0; d < spatial; ++d) target.push_back(xs[d + 2] * (*strides)[d]);
    }
    if (target.size() != spatial) {
      m.error(
          fmt::format("has output_shape {}; {} spatial dims need {} entries", formatIntTuple(*outputShape), spatial, spatial));
      return std::nullopt;
    }
    pads.assign(2 * spatial, 0);
    for (size_t d = 0; d < spatial; ++d) {
      int64_t total = (*strides)[d] * (xs[d + 2] - 1) + outputPadding[d] + ((ws[d + 2] - 1) * (*dilations)[d] + 1) - target[d];
      // Python's floor division, as ONNX's reference: a negative total (an output wider than the
      // kernel reaches) gives negative pads, zeros added at the ends.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = autoPad == "SAME_UPPER";
      pads[d] = upper ? half : total - half;
      pads[d + spatial] = upper ? total - half : half;
    }
  } else if (autoPad != "NOTSET" && autoPad != "VALID") {
    m.error(fmt::format("has auto_pad '{}'; valid: NOTSET, VALID, SAME_UPPER, SAME_LOWER", autoPad));
    return std::nullopt;
  } else if (autoPad == "VALID") {
    pads.assign(2 * spatial, 0);
  }
  if (pads.size() != 2 * spatial) {
    m.error(fmt::format("has {} pads; {} spatial dims need {}", pads.size(), spatial, 2 * spatial));
    return std::nullopt;
  }
  AttrMap attrs{{"strides", *strides},
                {"dilations", *dilations},
                {"pads", pads},
                {"output_padding", outputPadding},
                {"group", m.intAttr("group", 1)}};
  auto b = m.input(2);
  auto y = m.emit1(fmt::format("ConvTranspose{}D", spatial), {*x, *w}, std::move(attrs), b ? "conv" : "");
  if (!y || !b) return one(y);
  return one(m.emit1("BiasAdd", {*y, *b}));
}

// MaxPool and AveragePool: MaxPool or AvgPool (the Indices output and dilations are not mapped).
template <const char* Type>
Terms pooling(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  if (m.node().output_size() > 1 && !m.node().output(1).empty()) {
    m.error("asks for the Indices output; irc maps MaxPool's values only");
    return std::nullopt;
  }
  Shape xs = shapeOf(m, *x);
  auto kernel = m.intsAttr("kernel_shape");
  if (!kernel || xs.size() != kernel->size() + 2) {
    m.error(fmt::format("needs kernel_shape with one entry per spatial dim of x {}", formatShape(xs)));
    return std::nullopt;
  }
  size_t spatial = kernel->size();
  auto strides = spatialInts(m, "strides", spatial), dilations = spatialInts(m, "dilations", spatial);
  if (!strides || !dilations) return std::nullopt;
  if (std::any_of(dilations->begin(), dilations->end(), [](int64_t d) { return d != 1; })) {
    m.error(fmt::format("has dilations {}; irc maps pooling with dilations 1", formatIntTuple(*dilations)));
    return std::nullopt;
  }
  auto pads = padsOf(m, xs, *kernel, *strides, *dilations);
  if (!pads) return std::nullopt;
  AttrMap attrs{{"kernel_size", *kernel}, {"strides", *strides}, {"pads", *pads}, {"ceil_mode", m.intAttr("ceil_mode", 0) != 0}};
  if (std::string_view(Type) == "AvgPool") attrs["count_include_pad"] = m.intAttr("count_include_pad", 0) != 0;
  return one(m.emit1(Type, {*x}, std::move(attrs)));
}
constexpr char kMaxPool[] = "MaxPool", kAvgPool[] = "AvgPool";

// GlobalAveragePool, GlobalMaxPool: a ReduceMean / ReduceMax over the spatial dims, kept.
template <const char* Type>
Terms globalPool(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  IntTuple axes;
  for (size_t d = 2; d < shapeOf(m, *x).size(); ++d) axes.push_back(static_cast<int64_t>(d));
  return one(m.emit1(Type, {*x, Attribute(axes)}, {{"keep_dims", true}}));
}

}  // namespace

void addConvolutionMappers(MapperTable& table) {
  table.insert({
      {"Conv", conv},
      {"ConvTranspose", convTranspose},
      {"MaxPool", pooling<kMaxPool>},
      {"AveragePool", pooling<kAvgPool>},
      {"GlobalAveragePool", globalPool<kReduceMean>},
      {"GlobalMaxPool", globalPool<kReduceMax>},
  });
}

}  // namespace irc::onnx_import
