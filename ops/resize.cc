// Resize (ONNX's Resize; MindSpore's ResizeNearestNeighbor, ResizeBilinearV2 and ResizeBicubic
// over any dims): x interpolated to the shape `sizes`, one dim at a time, by `mode` (nearest,
// linear, cubic) with ONNX's coordinate transformations. The scale of a dim is its output size over
// its input size. A dim that keeps its size passes through (every mode is the identity there); a
// resized dim is a replicated factor (its output elements read input elements of other ranks'
// blocks, and irc exchanges no halos).
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

const std::vector<std::string> kModes = {"nearest", "linear", "cubic"};
const std::vector<std::string> kCoordinateModes = {"half_pixel",    "half_pixel_symmetric", "pytorch_half_pixel",
                                                   "align_corners", "asymmetric",           "tf_half_pixel_for_nn"};
const std::vector<std::string> kNearestModes = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

bool oneOf(const std::string& s, const std::vector<std::string>& valid) {
  return std::find(valid.begin(), valid.end(), s) != valid.end();
}

// Where output position y of a dim resized from `in` to `out` elements falls in the input (ONNX's
// coordinate_transformation_mode; the scale is out / in, so half_pixel_symmetric is half_pixel).
double sourceCoordinate(int64_t y, int64_t in, int64_t out, const std::string& mode) {
  const double scale = static_cast<double>(out) / static_cast<double>(in);
  if (mode == "align_corners")
    return out == 1 ? 0.0 : static_cast<double>(y) * static_cast<double>(in - 1) / static_cast<double>(out - 1);
  if (mode == "asymmetric") return static_cast<double>(y) / scale;
  if (mode == "pytorch_half_pixel") return out == 1 ? -0.5 : (static_cast<double>(y) + 0.5) / scale - 0.5;
  if (mode == "tf_half_pixel_for_nn") return (static_cast<double>(y) + 0.5) / scale;
  return (static_cast<double>(y) + 0.5) / scale - 0.5;  // half_pixel, half_pixel_symmetric
}

struct Tap {
  int64_t index;
  double weight;
};

// The input elements (and their weights) output position y of one dim reads. As ONNX's reference:
// the neighbours of x are i1 = ceil(x) - 1, i1 + 1 (and i1 - 1, i1 + 2 for cubic) with r = x - i1
// in (0, 1]; a neighbour outside the input reads the edge, or with exclude_outside weighs nothing.
std::vector<Tap> tapsOf(int64_t y, int64_t in, int64_t out, const AttrMap& attrs) {
  if (in == out) return {{y, 1.0}};  // every mode is the identity on a kept dim
  const auto& mode = std::get<std::string>(attrs.at("mode"));
  const double x = sourceCoordinate(y, in, out, std::get<std::string>(attrs.at("coordinate_transformation_mode")));
  const int64_t i1 = static_cast<int64_t>(std::ceil(x)) - 1;
  const double r = x - static_cast<double>(i1);
  std::vector<Tap> taps;
  if (mode == "nearest") {
    const auto& rounding = std::get<std::string>(attrs.at("nearest_mode"));
    bool upper = r == 1.0 || (rounding == "round_prefer_floor" && r > 0.5) || (rounding == "round_prefer_ceil" && r >= 0.5) ||
                 rounding == "ceil";
    taps = {{upper ? i1 + 1 : i1, 1.0}};
  } else if (mode == "linear") {
    taps = {{i1, 1.0 - r}, {i1 + 1, r}};
  } else {  // cubic, Keys' kernel with coefficient a
    const double a = std::get<double>(attrs.at("cubic_coeff_a")), s = 1.0 - r;
    taps = {{i1 - 1, ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a},
            {i1, ((a + 2) * r - (a + 3)) * r * r + 1},
            {i1 + 1, ((a + 2) * s - (a + 3)) * s * s + 1},
            {i1 + 2, ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a}};
  }
  const bool exclude = std::get<bool>(attrs.at("exclude_outside"));
  double kept = 0;
  for (Tap& t : taps) {
    if (exclude && (t.index < 0 || t.index >= in)) t.weight = 0;
    t.index = std::clamp<int64_t>(t.index, 0, in - 1);
    kept += t.weight;
  }
  if (exclude && kept != 0)
    for (Tap& t : taps) t.weight /= kept;
  return taps;
}

class Resize : public OpFamilyRules {
 public:
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Resize",
                    OpFamily::Resize,
                    {tensor("x")},
                    {attr("sizes", AttrKind::IntOrTuple, std::nullopt), attr("mode", AttrKind::String, std::string("nearest")),
                     attr("coordinate_transformation_mode", AttrKind::String, std::string("half_pixel")),
                     attr("nearest_mode", AttrKind::String, std::string("round_prefer_floor")),
                     attr("cubic_coeff_a", AttrKind::Float, -0.75), attr("exclude_outside", AttrKind::Bool, false)}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    const TensorType& x = *in[0].tensor;
    IntTuple sizes = asTuple(attrs.at("sizes"));
    if (sizes.size() != x.shape.size())
      return fail(fmt::format("sizes {} must give one size per dim of x {}", formatIntTuple(sizes), formatShape(x.shape)), -1,
                  "sizes");
    for (size_t d = 0; d < sizes.size(); ++d)
      if (sizes[d] < 1 || (x.shape[d] == 0 && sizes[d] != 0))
        return fail(fmt::format("sizes {} has {} for dim {} of size {}; a size is >= 1, from a dim of >= 1",
                                formatIntTuple(sizes), sizes[d], d, x.shape[d]),
                    -1, "sizes");
    const std::pair<const char*, const std::vector<std::string>*> checks[] = {
        {"mode", &kModes}, {"coordinate_transformation_mode", &kCoordinateModes}, {"nearest_mode", &kNearestModes}};
    for (const auto& [name, valid] : checks) {
      const auto& value = std::get<std::string>(attrs.at(name));
      if (!oneOf(value, *valid)) return fail(fmt::format("{} '{}'; valid: {}", name, value, fmt::join(*valid, ", ")), -1, name);
    }
    if (!isFloat(x.dtype) && std::get<std::string>(attrs.at("mode")) != "nearest")
      return fail(fmt::format("{} interpolation of {}; interpolating takes a float tensor (nearest takes any)",
                              std::get<std::string>(attrs.at("mode")), typeText(x)),
                  0);
    return std::vector<TensorType>{{x.dtype, Shape(sizes.begin(), sizes.end())}};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    const TensorValue& x = *in[0];
    const Shape& outShape = results[0].shape;
    const size_t rank = outShape.size();
    // The taps of every position of every dim, computed once.
    std::vector<std::vector<std::vector<Tap>>> taps(rank);
    for (size_t d = 0; d < rank; ++d)
      for (int64_t y = 0; y < outShape[d]; ++y) taps[d].push_back(tapsOf(y, x.shape[d], outShape[d], op.attrs));
    const auto sx = stridesOf(x.shape);
    TensorValue out = TensorValue::zeros(outShape);
    int64_t i = 0;
    forEach(outShape, [&](const Index& idx) {
      // The sum over every combination of the dims' taps (separable interpolation).
      double sum = 0;
      std::function<void(size_t, int64_t, double)> walk = [&](size_t d, int64_t offset, double weight) {
        if (d == rank) {
          sum += weight * x.data[offset];
          return;
        }
        for (const Tap& t : taps[d][idx[d]])
          if (t.weight != 0) walk(d + 1, offset + t.index * sx[d], weight * t.weight);
      };
      walk(0, 0, 1.0);
      out.data[i++] = sum;
    });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Float32, {2, 4, 8, 8}}};
    s.attrs["sizes"] = IntTuple{2, 4, 16, 16};
    s.attrs["mode"] = std::string("linear");
    s.note = "x (2, 4, 8, 8) to (2, 4, 16, 16), bilinear";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    return keptDimsRule(in.operands[0].shape, in.results[0].shape);
  }
  std::string_view replicatedWhy() const override { return "a resized dim (irc exchanges no halos)"; }
  // On a rank, a kept dim is the rank's slice of it: the sizes are the local output's.
  void localize(Op& op) const override { op.attrs["sizes"] = IntTuple(op.parallel->outputLayouts[0].sliceShape()); }
  // Its backward spreads the gradient by the same weights: shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
};

}  // namespace

const OpFamilyRules& resize() {
  static const Resize rules;
  return rules;
}

}  // namespace irc::families
