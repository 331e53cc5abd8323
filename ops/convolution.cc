// Conv1D, Conv2D, Conv3D (NC + 1, 2 or 3 spatial dims; ONNX's Conv without its bias, which
// the frontend adds as a BiasAdd, as MindSpore's nn.Conv2d does), and their transposes
// ConvTranspose1D/2D/3D (ONNX's ConvTranspose, MindSpore's Conv2DTranspose) with the same rule
// seen from the other side: the kernel is [c_in, c_out / group, kernel...]. The rule follows MindSpore's
// Conv2DInfo: the batch dim and the output channels split freely; splitting the input channels
// leaves the output partial (a sum over channel groups), completed by an AllReduce; the spatial
// dims and the kernel's are replicated factors (irc does not exchange halos, so a spatial dim is
// never split). A grouped convolution (group > 1) keeps its channels whole.
#include <functional>

#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

IntTuple tupleAttr(const AttrMap& attrs, const char* name) { return asTuple(attrs.at(name)); }

// The output size of one spatial dim (ONNX's and PyTorch's formula, floor mode).
int64_t convolvedSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin, int64_t padEnd) {
  return (in + padBegin + padEnd - dilation * (kernel - 1) - 1) / stride + 1;
}

// The operands' ranks and dtypes; `kernelDims` names w's two leading dims for the message.
std::optional<InferError> checkOperands(const OpDef& def, const TensorType& x, const TensorType& w, const char* kernelDims) {
  const size_t spatial = static_cast<size_t>(def.spatialDims);
  if (x.shape.size() != spatial + 2)
    return fail(fmt::format("{} takes x of rank {} (N, C and {} spatial dims); x has shape {}", def.type, spatial + 2, spatial,
                            formatShape(x.shape)),
                0);
  if (w.shape.size() != spatial + 2)
    return fail(fmt::format("{} takes w of rank {} ({} and {} kernel dims); w has shape {}", def.type, spatial + 2, kernelDims,
                            spatial, formatShape(w.shape)),
                1);
  if (x.dtype != w.dtype) return fail(fmt::format("operand dtypes differ: {} and {}", modelName(x.dtype), modelName(w.dtype)), 1);
  return std::nullopt;
}

// strides, dilations (one each per spatial dim, >= 1) and pads (the begins, then the ends, >= 0;
// a transposed convolution's may be negative: zeros added to its output).
std::optional<InferError> checkWindows(const AttrMap& attrs, size_t spatial, bool negativePads = false) {
  IntTuple strides = tupleAttr(attrs, "strides"), dilations = tupleAttr(attrs, "dilations"), pads = tupleAttr(attrs, "pads");
  if (strides.size() != spatial)
    return fail(fmt::format("strides {} must have {} entries", formatIntTuple(strides), spatial), -1, "strides");
  if (dilations.size() != spatial)
    return fail(fmt::format("dilations {} must have {} entries", formatIntTuple(dilations), spatial), -1, "dilations");
  if (pads.size() != 2 * spatial)
    return fail(fmt::format("pads {} must have {} entries (the begins, then the ends)", formatIntTuple(pads), 2 * spatial), -1,
                "pads");
  for (size_t d = 0; d < spatial; ++d)
    if (strides[d] < 1 || dilations[d] < 1 || (!negativePads && (pads[d] < 0 || pads[d + spatial] < 0)))
      return fail(fmt::format("spatial dim {}: stride {}, dilation {} and pads {}, {} must be positive, positive and >= 0", d,
                              strides[d], dilations[d], pads[d], pads[d + spatial]),
                  -1, "strides");
  return std::nullopt;
}

InferResult inferConv(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  const TensorType& w = *in[1].tensor;
  const size_t spatial = static_cast<size_t>(def.spatialDims);
  if (auto e = checkOperands(def, x, w, "O, C/group")) return *e;
  if (auto e = checkWindows(attrs, spatial)) return *e;
  IntTuple strides = tupleAttr(attrs, "strides"), dilations = tupleAttr(attrs, "dilations"), pads = tupleAttr(attrs, "pads");
  int64_t group = intAttr(attrs, "group");
  if (group < 1 || x.shape[1] % group != 0 || w.shape[0] % group != 0)
    return fail(
        fmt::format("group {} must divide the input channels ({}) and the output channels ({})", group, x.shape[1], w.shape[0]),
        -1, "group");
  if (w.shape[1] * group != x.shape[1])
    return fail(fmt::format("w has {} input channels per group; x has {} channels in {} group(s)", w.shape[1], x.shape[1], group),
                1);
  Shape out = {x.shape[0], w.shape[0]};
  for (size_t d = 0; d < spatial; ++d) {
    int64_t size = convolvedSize(x.shape[d + 2], w.shape[d + 2], strides[d], dilations[d], pads[d], pads[d + spatial]);
    if (size < 1)
      return fail(fmt::format("spatial dim {} of x ({}) is smaller than the dilated kernel ({}) with its padding", d,
                              x.shape[d + 2], dilations[d] * (w.shape[d + 2] - 1) + 1),
                  0);
    out.push_back(size);
  }
  return std::vector<TensorType>{{x.dtype, out}};
}

// out[n, o, p...] = sum over the group's channels c and kernel offsets k of
// x[n, c, p * stride + k * dilation - pad_begin] * w[o, c - group_start, k] (zero outside x).
TensorValue convolve(const Op& op, const TensorValue& x, const TensorValue& w, const Shape& outShape) {
  const AttrMap& attrs = op.attrs;
  const IntTuple strides = tupleAttr(attrs, "strides"), dilations = tupleAttr(attrs, "dilations"),
                 pads = tupleAttr(attrs, "pads");
  const int64_t group = intAttr(attrs, "group");
  const size_t spatial = outShape.size() - 2;
  const int64_t channelsPerGroup = w.shape[1], outPerGroup = w.shape[0] / group;
  const auto sx = stridesOf(x.shape), sw = stridesOf(w.shape);
  const Shape kernel(w.shape.begin() + 2, w.shape.end());
  TensorValue out = TensorValue::zeros(outShape);
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    const int64_t n = idx[0], o = idx[1], firstChannel = (o / outPerGroup) * channelsPerGroup;
    double sum = 0;
    for (int64_t c = 0; c < channelsPerGroup; ++c)
      forEach(kernel, [&](const Index& k) {
        int64_t xo = n * sx[0] + (firstChannel + c) * sx[1];
        for (size_t d = 0; d < spatial; ++d) {
          int64_t pos = idx[d + 2] * strides[d] + k[d] * dilations[d] - pads[d];
          if (pos < 0 || pos >= x.shape[d + 2]) return;  // padding: zero
          xo += pos * sx[d + 2];
        }
        int64_t wo = o * sw[0] + c * sw[1];
        for (size_t d = 0; d < spatial; ++d) wo += k[d] * sw[d + 2];
        sum += x.data[xo] * w.data[wo];
      });
    out.data[i++] = sum;
  });
  return out;
}

// ConvTranspose: x [n, c, spatial...], w [c, o / group, kernel...]; each output dim is
// stride * (in - 1) + output_padding + dilation * (kernel - 1) + 1 - pads (ONNX's formula; a
// negative pad widens the output by zeros, as ONNX's output_shape may ask).
InferResult inferConvTranspose(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  const TensorType& w = *in[1].tensor;
  const size_t spatial = static_cast<size_t>(def.spatialDims);
  if (auto e = checkOperands(def, x, w, "C, O/group")) return *e;
  if (auto e = checkWindows(attrs, spatial, true)) return *e;
  IntTuple strides = tupleAttr(attrs, "strides"), dilations = tupleAttr(attrs, "dilations"), pads = tupleAttr(attrs, "pads"),
           outputPadding = tupleAttr(attrs, "output_padding");
  int64_t group = intAttr(attrs, "group");
  if (outputPadding.size() != spatial)
    return fail(fmt::format("output_padding {} must have {} entries", formatIntTuple(outputPadding), spatial), -1,
                "output_padding");
  if (group < 1 || x.shape[1] % group != 0)
    return fail(fmt::format("group {} must divide the input channels ({})", group, x.shape[1]), -1, "group");
  if (w.shape[0] != x.shape[1])
    return fail(fmt::format("w has {} input channels (its dim 0); x has {}", w.shape[0], x.shape[1]), 1);
  Shape out = {x.shape[0], w.shape[1] * group};
  for (size_t d = 0; d < spatial; ++d) {
    if (outputPadding[d] < 0 || outputPadding[d] >= std::max(strides[d], dilations[d]))
      return fail(fmt::format("output_padding {} of spatial dim {} must be in [0, max(stride {}, dilation {}))", outputPadding[d],
                              d, strides[d], dilations[d]),
                  -1, "output_padding");
    int64_t size = strides[d] * (x.shape[d + 2] - 1) + outputPadding[d] + dilations[d] * (w.shape[d + 2] - 1) + 1 - pads[d] -
                   pads[d + spatial];
    if (size < 1)
      return fail(fmt::format("spatial dim {}: the pads ({}, {}) remove the whole output ({} before them)", d, pads[d],
                              pads[d + spatial], size + pads[d] + pads[d + spatial]),
                  -1, "pads");
    out.push_back(size);
  }
  return std::vector<TensorType>{{x.dtype, out}};
}

// Every input element spreads over the output through the kernel:
// out[n, o, p * stride + k * dilation - pad_begin] += x[n, c, p] * w[c, o - group_start, k].
TensorValue transposeConvolve(const Op& op, const TensorValue& x, const TensorValue& w, const Shape& outShape) {
  const IntTuple strides = tupleAttr(op.attrs, "strides"), dilations = tupleAttr(op.attrs, "dilations"),
                 pads = tupleAttr(op.attrs, "pads");
  const int64_t group = intAttr(op.attrs, "group");
  const size_t spatial = outShape.size() - 2;
  const int64_t inPerGroup = x.shape[1] / group, outPerGroup = w.shape[1];
  const auto sw = stridesOf(w.shape), so = stridesOf(outShape);
  const Shape kernel(w.shape.begin() + 2, w.shape.end());
  TensorValue out = TensorValue::zeros(outShape);
  int64_t i = 0;
  forEach(x.shape, [&](const Index& idx) {
    const double v = x.data[i++];
    const int64_t n = idx[0], c = idx[1], firstOut = (c / inPerGroup) * outPerGroup;
    forEach(kernel, [&](const Index& k) {
      int64_t at = n * so[0];
      for (size_t d = 0; d < spatial; ++d) {
        int64_t pos = idx[d + 2] * strides[d] + k[d] * dilations[d] - pads[d];
        if (pos < 0 || pos >= outShape[d + 2]) return;  // cut by the pads
        at += pos * so[d + 2];
      }
      int64_t wo = c * sw[0];
      for (size_t d = 0; d < spatial; ++d) wo += k[d] * sw[d + 2];
      for (int64_t o = 0; o < outPerGroup; ++o) out.data[at + (firstOut + o) * so[1]] += v * w.data[wo + o * sw[1]];
    });
  });
  return out;
}

// One op per spatial rank, `<stem>1D` to `<stem>3D`, on operands x and w: strides and
// dilations (1), pads (a begin and an end per spatial dim, 0), `extra` attributes, group (1).
void defineSpatialRanks(std::vector<OpDef>& defs, std::string_view stem, OpFamily family,
                        const std::function<std::vector<AttrSpec>(int spatial)>& extra) {
  for (int spatial = 1; spatial <= 3; ++spatial) {
    IntTuple ones(spatial, 1), pairs(2 * spatial, 0);
    std::vector<AttrSpec> attrs = {attr("strides", AttrKind::IntOrTuple, ones), attr("dilations", AttrKind::IntOrTuple, ones),
                                   attr("pads", AttrKind::IntOrTuple, pairs)};
    for (AttrSpec& a : extra(spatial)) attrs.push_back(std::move(a));
    attrs.push_back(attr("group", AttrKind::Int, int64_t{1}));
    defs.push_back({fmt::format("{}{}D", stem, spatial), family, {tensor("x"), tensor("w")}, std::move(attrs)});
    defs.back().spatialDims = spatial;
  }
}

// The batch, input-channel and output-channel factors (in that order): the input channels are
// contracted (a partial sum where split), the output channels pass through; a grouped
// convolution keeps both whole.
struct ChannelFactors {
  int n, c, o;
};
ChannelFactors channelFactors(RuleBuilder& b, const RuleInputs& in, int64_t outChannelsInKernel) {
  const bool grouped = std::get<int64_t>(in.attrs.at("group")) != 1;
  int n = b.factor(in.operands[0].shape[0]);
  int c = b.factor(in.operands[0].shape[1], grouped ? FactorKind::Replicated : FactorKind::Reduction);
  int o = b.factor(outChannelsInKernel, grouped ? FactorKind::Replicated : FactorKind::PassThrough);
  return {n, c, o};
}

// The rule of a convolution whose channel dims are given: every spatial and kernel dim (2
// onwards) of x, w and the output a replicated factor of its own (irc exchanges no halos).
OpRule withWholeSpatialDims(RuleBuilder& b, const RuleInputs& in, DimFactors xDims, DimFactors wDims, DimFactors outDims) {
  for (size_t d = 2; d < in.operands[0].shape.size(); ++d)
    xDims.push_back({b.factor(in.operands[0].shape[d], FactorKind::Replicated)});
  for (size_t d = 2; d < in.operands[1].shape.size(); ++d)
    wDims.push_back({b.factor(in.operands[1].shape[d], FactorKind::Replicated)});
  for (size_t d = 2; d < in.results[0].shape.size(); ++d)
    outDims.push_back({b.factor(in.results[0].shape[d], FactorKind::Replicated)});
  b.rule.operands = {std::move(xDims), std::move(wDims)};
  b.rule.results = {std::move(outDims)};
  return b.done();
}

class Convolution : public OpFamilyRules {
 public:
  bool operandIsWeight(const Graph&, const Op&, size_t operand) const override { return operand >= 1; }
  SavedForBackward savedForBackward(const Op& op) const override { return factorsSaved(op); }
  void define(std::vector<OpDef>& defs) const override {
    defineSpatialRanks(defs, "Conv", OpFamily::Convolution, [](int) { return std::vector<AttrSpec>{}; });
  }
  InferResult inferTypes(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferConv(def, in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {convolve(op, *in[0], *in[1], results[0].shape)};
  }
  void sample(const OpDef& def, OpSample& s) const override {
    Shape x = {2, 4}, w = {8, 4};
    for (int d = 0; d < def.spatialDims; ++d) x.push_back(8), w.push_back(3);
    s.operands = {{DType::Float32, x}, {DType::Float32, w}};
    s.note = fmt::format("x {}, w {}", formatShape(x), formatShape(w));
  }
  // x: [n, c, spatial...], w: [o, c, kernel...], out: [n, o, spatial'...]. MindSpore's device
  // matrix for Conv2D is (n, c, h, w) for x with o after them: here [n, c, o, spatial...].
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& w = in.operands[1].shape;
    const bool grouped = std::get<int64_t>(in.attrs.at("group")) != 1;
    RuleBuilder b;
    auto [n, c, o] = channelFactors(b, in, w[0]);
    return withWholeSpatialDims(b, in, {{n}, {c}}, {{o}, {grouped ? b.factor(w[1], FactorKind::Replicated) : c}}, {{n}, {o}});
  }
  std::string_view replicatedWhy() const override {
    return "a spatial or kernel dim (irc exchanges no halos), or a channel dim of a grouped convolution";
  }
  std::string_view partialWhy() const override { return "splits its input channels"; }
};

// x: [n, c, spatial...], w: [c, o / group, kernel...], out: [n, o, spatial'...]: MindSpore's
// Conv2DTranspose (Conv2DBackpropInput) splits like the Conv2D whose gradient it is — batch and
// output channels freely, input channels into a partial sum.
class ConvTranspose : public OpFamilyRules {
 public:
  bool operandIsWeight(const Graph&, const Op&, size_t operand) const override { return operand >= 1; }
  SavedForBackward savedForBackward(const Op& op) const override { return factorsSaved(op); }
  void define(std::vector<OpDef>& defs) const override {
    defineSpatialRanks(defs, "ConvTranspose", OpFamily::ConvTranspose, [](int spatial) {
      return std::vector<AttrSpec>{attr("output_padding", AttrKind::IntOrTuple, IntTuple(spatial, 0))};
    });
  }
  InferResult inferTypes(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferConvTranspose(def, in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {transposeConvolve(op, *in[0], *in[1], results[0].shape)};
  }
  void sample(const OpDef& def, OpSample& s) const override {
    Shape x = {2, 8}, w = {8, 4};
    for (int d = 0; d < def.spatialDims; ++d) x.push_back(4), w.push_back(2);
    s.operands = {{DType::Float32, x}, {DType::Float32, w}};
    s.attrs["strides"] = IntTuple(def.spatialDims, 2);
    s.note = fmt::format("x {}, w {}, strides 2", formatShape(x), formatShape(w));
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const bool grouped = std::get<int64_t>(in.attrs.at("group")) != 1;
    RuleBuilder b;
    auto [n, c, o] = channelFactors(b, in, in.operands[1].shape[1]);
    return withWholeSpatialDims(b, in, {{n}, {c}}, {{c}, {o}},
                                {{n}, {grouped ? b.factor(in.results[0].shape[1], FactorKind::Replicated) : o}});
  }
  std::string_view replicatedWhy() const override {
    return "a spatial or kernel dim (irc exchanges no halos), or a channel dim of a grouped transposed convolution";
  }
  std::string_view partialWhy() const override { return "splits its input channels"; }
};

}  // namespace

const OpFamilyRules& convTranspose() {
  static const ConvTranspose rules;
  return rules;
}

const OpFamilyRules& convolution() {
  static const Convolution rules;
  return rules;
}

}  // namespace irc::families
