// MaxPool and AvgPool over the spatial dims of an NC... tensor (1, 2 or 3 of them; ONNX's
// MaxPool and AveragePool). The batch and channel dims pass through; the spatial dims are
// replicated factors (irc exchanges no halos), as MindSpore's MaxPoolInfo keeps H and W whole.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

// The output size of one spatial dim; ceil_mode rounds up, but a window may not start in the end
// padding (ONNX's and PyTorch's rule).
int64_t pooledSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd, bool ceilMode) {
  int64_t span = in + padBegin + padEnd - kernel;
  int64_t size = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceilMode && (size - 1) * stride >= in + padBegin) --size;
  return size;
}

InferResult inferPool(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  if (x.shape.size() < 3 || x.shape.size() > 5)
    return fail(
        fmt::format("{} takes x of rank 3 to 5 (N, C and 1 to 3 spatial dims); x has shape {}", def.type, formatShape(x.shape)),
        0);
  const size_t spatial = x.shape.size() - 2;
  IntTuple kernel = asTuple(attrs.at("kernel_size")), strides = asTuple(attrs.at("strides")), pads = asTuple(attrs.at("pads"));
  if (kernel.size() != spatial)
    return fail(
        fmt::format("kernel_size {} must have {} entries (x has {} spatial dims)", formatIntTuple(kernel), spatial, spatial), -1,
        "kernel_size");
  if (strides.empty()) strides.assign(spatial, 1);
  if (pads.empty()) pads.assign(2 * spatial, 0);
  if (strides.size() != spatial)
    return fail(fmt::format("strides {} must have {} entries", formatIntTuple(strides), spatial), -1, "strides");
  if (pads.size() != 2 * spatial)
    return fail(fmt::format("pads {} must have {} entries (the begins, then the ends)", formatIntTuple(pads), 2 * spatial), -1,
                "pads");
  Shape out = {x.shape[0], x.shape[1]};
  for (size_t d = 0; d < spatial; ++d) {
    if (kernel[d] < 1 || strides[d] < 1 || pads[d] < 0 || pads[d + spatial] < 0 || pads[d] >= kernel[d] ||
        pads[d + spatial] >= kernel[d])
      return fail(fmt::format("spatial dim {}: kernel {}, stride {} must be positive and pads {}, {} in [0, kernel)", d,
                              kernel[d], strides[d], pads[d], pads[d + spatial]),
                  -1, "kernel_size");
    if (x.shape[d + 2] + pads[d] + pads[d + spatial] < kernel[d])
      return fail(
          fmt::format("spatial dim {} of x ({}) with its padding is smaller than the kernel ({})", d, x.shape[d + 2], kernel[d]),
          0);
    out.push_back(pooledSize(x.shape[d + 2], kernel[d], strides[d], pads[d], pads[d + spatial], boolAttr(attrs, "ceil_mode")));
  }
  return std::vector<TensorType>{{x.dtype, out}};
}

// The max (or mean) of each window; padding never wins a max, and is counted in a mean only
// with count_include_pad.
TensorValue pool(const Op& op, bool max, const TensorValue& x, const Shape& outShape) {
  const size_t spatial = outShape.size() - 2;
  IntTuple kernel = asTuple(op.attrs.at("kernel_size")), strides = asTuple(op.attrs.at("strides")),
           pads = asTuple(op.attrs.at("pads"));
  if (strides.empty()) strides.assign(spatial, 1);
  if (pads.empty()) pads.assign(2 * spatial, 0);
  const bool countPad = !max && std::get<bool>(op.attrs.at("count_include_pad"));
  const auto sx = stridesOf(x.shape);
  TensorValue out = TensorValue::zeros(outShape);
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
    int64_t count = 0;
    forEach(Shape(kernel.begin(), kernel.end()), [&](const Index& k) {
      int64_t xo = idx[0] * sx[0] + idx[1] * sx[1];
      bool inside = true, inPaddedRange = true;
      for (size_t d = 0; d < spatial; ++d) {
        int64_t pos = idx[d + 2] * strides[d] + k[d] - pads[d];
        inside = inside && pos >= 0 && pos < x.shape[d + 2];
        inPaddedRange = inPaddedRange && pos < x.shape[d + 2] + pads[d + spatial];  // ceil_mode windows may run past it
        xo += pos * sx[d + 2];
      }
      if (inside) {
        acc = max ? std::max(acc, x.data[xo]) : acc + x.data[xo];
        ++count;
      } else if (countPad && inPaddedRange) {
        ++count;
      }
    });
    out.data[i++] = max ? acc : acc / static_cast<double>(count);
  });
  return out;
}

class Pool : public OpFamilyRules {
 public:
  // Average pooling spreads its gradient by shape alone; max pooling keeps where it was taken.
  SavedForBackward savedForBackward(const Op& op) const override {
    if (op.type == "MaxPool") return {{0}, {0}, {}};
    return {};
  }
  void define(std::vector<OpDef>& defs) const override {
    std::vector<AttrSpec> common = {attr("kernel_size", AttrKind::IntOrTuple, std::nullopt),
                                    attr("strides", AttrKind::IntOrTuple, IntTuple{}),
                                    attr("pads", AttrKind::IntOrTuple, IntTuple{}), attr("ceil_mode", AttrKind::Bool, false)};
    defs.push_back({"MaxPool", OpFamily::Pool, {tensor("x")}, common});
    defs.back().reduction = Reduction::Max;
    common.push_back(attr("count_include_pad", AttrKind::Bool, false));
    defs.push_back({"AvgPool", OpFamily::Pool, {tensor("x")}, common});
    defs.back().reduction = Reduction::Mean;
  }
  InferResult inferTypes(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferPool(def, in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {pool(op, defOf(op).reduction == Reduction::Max, *in[0], results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Float32, {2, 4, 8, 8}}};
    s.attrs["kernel_size"] = IntTuple{2, 2};
    s.attrs["strides"] = IntTuple{2, 2};
    s.note = "x (2, 4, 8, 8), kernel (2, 2), strides (2, 2)";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    const Shape& x = in.operands[0].shape;
    const Shape& out = in.results[0].shape;
    RuleBuilder b;
    int n = b.factor(x[0]), c = b.factor(x[1]);
    DimFactors xDims = {{n}, {c}}, outDims = {{n}, {c}};
    for (size_t d = 2; d < x.size(); ++d) {
      xDims.push_back({b.factor(x[d], FactorKind::Replicated)});
      outDims.push_back({b.factor(out[d], FactorKind::Replicated)});
    }
    b.rule.operands = {xDims};
    b.rule.results = {outDims};
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a spatial dim its windows slide over (irc exchanges no halos)"; }
};

}  // namespace

const OpFamilyRules& pool() {
  static const Pool rules;
  return rules;
}

}  // namespace irc::families
