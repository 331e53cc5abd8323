// Pad (MindSpore's Pad and PadV3; ONNX's Pad): x with `paddings` elements before and after each
// dim, filled by `mode`: `value` (constant), x mirrored without its edge (reflect), the edge
// repeated (edge) or x wrapped around (wrap; PyTorch's circular). A padded dim is needed whole
// (only the edge ranks would pad, and reflect and wrap read the far side); every other dim passes
// through.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

// `paddings` as (before, after) per dim: [b0, a0, b1, a1, ...] (MindSpore writes ((b0, a0), ...)).
std::optional<InferError> checkPaddings(const IntTuple& p, size_t rank) {
  if (p.size() != 2 * rank)
    return fail(fmt::format("paddings {} must give a (before, after) pair for each of the {} dims", formatIntTuple(p), rank), -1,
                "paddings");
  for (int64_t v : p)
    if (v < 0)
      return fail(fmt::format("paddings {} has {}; irc pads, it does not crop (entries >= 0)", formatIntTuple(p), v), -1,
                  "paddings");
  return std::nullopt;
}

const std::vector<std::string>& padModes() {
  static const std::vector<std::string> modes = {"constant", "reflect", "edge", "wrap"};
  return modes;
}

// The index of x an out-of-range position `i` of a dim of size n reads, or -1 for the constant.
int64_t sourceIndex(int64_t i, int64_t n, const std::string& mode) {
  if (i >= 0 && i < n) return i;
  if (mode == "edge") return i < 0 ? 0 : n - 1;
  if (mode == "wrap") return ((i % n) + n) % n;
  if (mode == "reflect") {
    if (n == 1) return 0;
    int64_t period = 2 * (n - 1), k = ((i % period) + period) % period;  // numpy's reflect, any width
    return k < n ? k : period - k;
  }
  return -1;
}

class Pad : public OpFamilyRules {
 public:
  // Its backward cuts the gradient back: shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Pad",
                    OpFamily::Pad,
                    {tensor("x")},
                    {attr("paddings", AttrKind::IntOrTuple, std::nullopt), attr("value", AttrKind::Float, 0.0),
                     attr("mode", AttrKind::String, std::string("constant"))}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    const TensorType& x = *in[0].tensor;
    IntTuple p = asTuple(attrs.at("paddings"));
    if (auto e = checkPaddings(p, x.shape.size())) return *e;
    const auto& mode = std::get<std::string>(attrs.at("mode"));
    if (std::find(padModes().begin(), padModes().end(), mode) == padModes().end())
      return fail(fmt::format("mode '{}' is not a padding mode; valid: {}", mode, fmt::join(padModes(), ", ")), -1, "mode");
    for (size_t d = 0; d < x.shape.size() && mode != "constant"; ++d)
      if ((p[2 * d] > 0 || p[2 * d + 1] > 0) && x.shape[d] == 0)
        return fail(fmt::format("dim {} is empty; mode '{}' pads from x's own elements", d, mode), 0);
    Shape out = x.shape;
    for (size_t d = 0; d < out.size(); ++d) out[d] += p[2 * d] + p[2 * d + 1];
    return std::vector<TensorType>{{x.dtype, out}};
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    const TensorValue& x = *in[0];
    IntTuple p = asTuple(op.attrs.at("paddings"));
    const auto& mode = std::get<std::string>(op.attrs.at("mode"));
    const double value = std::get<double>(op.attrs.at("value"));
    TensorValue out = TensorValue::zeros(results[0].shape);
    auto sx = stridesOf(x.shape);
    int64_t i = 0;
    forEach(out.shape, [&](const Index& idx) {
      int64_t from = 0;
      for (size_t d = 0; d < idx.size() && from >= 0; ++d) {
        int64_t k = sourceIndex(idx[d] - p[2 * d], x.shape[d], mode);
        from = k < 0 ? -1 : from + k * sx[d];
      }
      out.data[i++] = from < 0 ? value : x.data[from];
    });
    return {out};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.attrs["paddings"] = IntTuple{0, 0, 1, 2};
    s.note = "1 before and 2 after dim 1";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    return keptDimsRule(in.operands[0].shape, in.results[0].shape);
  }
  std::string_view replicatedWhy() const override { return "a padded dim"; }
};

}  // namespace

const OpFamilyRules& pad() {
  static const Pad rules;
  return rules;
}

}  // namespace irc::families
