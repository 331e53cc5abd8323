#include "frontends/onnx/mapping/mapping_common.h"

namespace irc::onnx_import {
namespace {

// ---- normalizations and reductions ----

Terms softmaxAs(NodeMapping& m, const std::string& type) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  int64_t rank = static_cast<int64_t>(shapeOf(m, *x).size());
  int64_t axis = m.intAttr("axis", m.opset() >= 13 ? -1 : 1);
  auto n = normalizeAxis(axis, rank);
  if (m.opset() < 13 && n && *n != rank - 1) {
    m.error(fmt::format("before opset 13 {} flattens from axis {}; irc maps only the last axis there", m.node().op_type(), axis));
    return std::nullopt;
  }
  return one(m.emit1(type, {*x}, {{"axis", axis}}));
}
Terms softmax(NodeMapping& m) { return softmaxAs(m, "Softmax"); }
Terms logSoftmax(NodeMapping& m) { return softmaxAs(m, "LogSoftmax"); }

Terms layerNormalization(NodeMapping& m) {
  auto x = need(m, 0), scale = need(m, 1);
  if (!x || !scale) return std::nullopt;
  int64_t axis = m.intAttr("axis", -1);
  std::optional<Term> bias = m.input(2);
  if (!bias) {
    const TensorType& st = m.typeOf(*scale);
    bias = m.constant(st, TensorValue::zeros(st.shape), "zero_bias");
  }
  double epsilon = m.floatAttr("epsilon", 1e-5);
  auto out =
      m.emit("LayerNorm", {*x, *scale, *bias}, {{"begin_norm_axis", axis}, {"begin_params_axis", axis}, {"epsilon", epsilon}});
  if (!out) return std::nullopt;
  std::vector<Term> results{(*out)[0]};
  auto wanted = [&](int i) { return m.node().output_size() > i && !m.node().output(i).empty(); };
  // ONNX's Mean is LayerNorm's mean (both keep the normalized dims as 1s); its InvStdDev is
  // 1 / sqrt(variance + epsilon) of LayerNorm's population variance.
  if (wanted(1) || wanted(2)) results.push_back((*out)[1]);
  if (wanted(2)) {
    DType dt = m.typeOf((*out)[2]).dtype;
    auto shifted = m.emit1("Add", {(*out)[2], Attribute(ScalarTensor{dt, epsilon})}, {}, "variance_epsilon");
    if (!shifted) return std::nullopt;
    auto inverse = m.emit1("Pow", {*shifted, Attribute(ScalarTensor{dt, -0.5})}, {}, "inv_std_dev");
    if (!inverse) return std::nullopt;
    results.push_back(*inverse);
  }
  return results;
}

// ---- normalizations written as the ops they compute ----

// A per-channel [C] vector as [C, 1, ...] against an NC... tensor of `rank` dims.
std::optional<Term> perChannel(NodeMapping& m, const Term& v, size_t rank, const std::string& role) {
  IntTuple shape = {shapeOf(m, v).empty() ? 1 : shapeOf(m, v)[0]};
  shape.resize(std::max<size_t>(rank - 1, 1), 1);
  return m.emit1("Reshape", {v, Attribute(shape)}, {}, role);
}

// (x - mean) * (var + epsilon)^-0.5, the shared core of the normalizations: `centred` is x - mean.
std::optional<Term> normalized(NodeMapping& m, const Term& centred, const Term& var, double epsilon) {
  DType dt = m.typeOf(centred).dtype;
  auto shifted = m.emit1("Add", {var, Attribute(ScalarTensor{dt, epsilon})}, {}, "var_epsilon");
  if (!shifted) return std::nullopt;
  auto inverse = m.emit1("Pow", {*shifted, Attribute(ScalarTensor{dt, -0.5})}, {}, "inv_std");
  if (!inverse) return std::nullopt;
  return m.emit1("Mul", {centred, *inverse}, {}, "normalized");
}

// Mean and centred values of x over `axes` (kept), and the population variance.
struct Moments {
  Term centred, var;
};
std::optional<Moments> momentsOf(NodeMapping& m, const Term& x, const IntTuple& axes) {
  auto mean = m.emit1("ReduceMean", {x, Attribute(axes)}, {{"keep_dims", true}}, "mean");
  if (!mean) return std::nullopt;
  auto centred = m.emit1("Sub", {x, *mean}, {}, "centred");
  if (!centred) return std::nullopt;
  auto squared = m.emit1("Mul", {*centred, *centred}, {}, "squared");
  if (!squared) return std::nullopt;
  auto var = m.emit1("ReduceMean", {*squared, Attribute(axes)}, {{"keep_dims", true}}, "variance");
  if (!var) return std::nullopt;
  return Moments{*centred, *var};
}

// BatchNormalization at inference: x * a + b per channel, a = scale / sqrt(var + epsilon) and
// b = B - mean * a (constants fold, so a model's frozen statistics cost two ops).
Terms batchNormalization(NodeMapping& m) {
  auto x = need(m, 0), scale = need(m, 1), bias = need(m, 2), mean = need(m, 3), var = need(m, 4);
  if (!x || !scale || !bias || !mean || !var) return std::nullopt;
  if (m.intAttr("training_mode", 0) != 0 || (m.node().output_size() > 1 && !m.node().output(1).empty())) {
    m.error("runs in training mode (batch statistics); irc maps BatchNormalization at inference");
    return std::nullopt;
  }
  size_t rank = shapeOf(m, *x).size();
  if (rank < 2) {
    m.error(fmt::format("normalizes x of shape {}; it needs N and C", formatShape(shapeOf(m, *x))));
    return std::nullopt;
  }
  DType dt = m.typeOf(*x).dtype;
  auto shifted = m.emit1("Add", {*var, Attribute(ScalarTensor{dt, m.floatAttr("epsilon", 1e-5)})}, {}, "var_epsilon");
  if (!shifted) return std::nullopt;
  auto inverse = m.emit1("Pow", {*shifted, Attribute(ScalarTensor{dt, -0.5})}, {}, "inv_std");
  if (!inverse) return std::nullopt;
  auto a = m.emit1("Mul", {*scale, *inverse}, {}, "scale");
  if (!a) return std::nullopt;
  auto meanA = m.emit1("Mul", {*mean, *a}, {}, "mean_scale");
  if (!meanA) return std::nullopt;
  auto b = m.emit1("Sub", {*bias, *meanA}, {}, "shift");
  if (!b) return std::nullopt;
  auto ac = perChannel(m, *a, rank, "scale_c"), bc = perChannel(m, *b, rank, "shift_c");
  if (!ac || !bc) return std::nullopt;
  auto scaled = m.emit1("Mul", {*x, *ac}, {}, "scaled");
  if (!scaled) return std::nullopt;
  return one(m.emit1("Add", {*scaled, *bc}));
}

// InstanceNormalization: each (n, c) normalized over its spatial dims, then scale and B per channel.
Terms instanceNormalization(NodeMapping& m) {
  auto x = need(m, 0), scale = need(m, 1), bias = need(m, 2);
  if (!x || !scale || !bias) return std::nullopt;
  size_t rank = shapeOf(m, *x).size();
  if (rank < 3) {
    m.error(fmt::format("normalizes x of shape {}; it needs N, C and a spatial dim", formatShape(shapeOf(m, *x))));
    return std::nullopt;
  }
  IntTuple axes;
  for (size_t d = 2; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  auto moments = momentsOf(m, *x, axes);
  if (!moments) return std::nullopt;
  auto y = normalized(m, moments->centred, moments->var, m.floatAttr("epsilon", 1e-5));
  auto sc = perChannel(m, *scale, rank, "scale_c"), bc = perChannel(m, *bias, rank, "bias_c");
  if (!y || !sc || !bc) return std::nullopt;
  auto scaled = m.emit1("Mul", {*y, *sc}, {}, "scaled");
  if (!scaled) return std::nullopt;
  return one(m.emit1("Add", {*scaled, *bc}));
}

// GroupNormalization: x [N, C, ...] as [N, G, rest] normalized over rest; scale and bias per
// group (opset 18) or per channel (opset 21).
Terms groupNormalization(NodeMapping& m) {
  auto x = need(m, 0), scale = need(m, 1), bias = need(m, 2);
  if (!x || !scale || !bias) return std::nullopt;
  Shape xs = shapeOf(m, *x);
  int64_t groups = m.intAttr("num_groups", 0);
  if (xs.size() < 2 || groups < 1 || xs[1] % groups != 0) {
    m.error(fmt::format("has num_groups {}; it must divide the channels of x {}", groups, formatShape(xs)));
    return std::nullopt;
  }
  auto grouped = m.emit1("Reshape", {*x, Attribute(IntTuple{xs[0], groups, -1})}, {}, "grouped");
  if (!grouped) return std::nullopt;
  auto moments = momentsOf(m, *grouped, {2});
  if (!moments) return std::nullopt;
  auto y = normalized(m, moments->centred, moments->var, m.floatAttr("epsilon", 1e-5));
  if (!y) return std::nullopt;
  bool perGroup = shapeOf(m, *scale) == Shape{groups} && groups != xs[1];
  if (perGroup) {  // opset 18: per group, applied to [N, G, rest]
    auto sg = m.emit1("Reshape", {*scale, Attribute(IntTuple{groups, 1})}, {}, "scale_g");
    auto bg = m.emit1("Reshape", {*bias, Attribute(IntTuple{groups, 1})}, {}, "bias_g");
    if (!sg || !bg) return std::nullopt;
    auto scaled = m.emit1("Mul", {*y, *sg}, {}, "scaled");
    if (!scaled) return std::nullopt;
    auto shifted = m.emit1("Add", {*scaled, *bg}, {}, "shifted");
    if (!shifted) return std::nullopt;
    return one(m.emit1("Reshape", {*shifted, Attribute(IntTuple(xs.begin(), xs.end()))}));
  }
  auto back = m.emit1("Reshape", {*y, Attribute(IntTuple(xs.begin(), xs.end()))}, {}, "ungrouped");
  auto sc = perChannel(m, *scale, xs.size(), "scale_c"), bc = perChannel(m, *bias, xs.size(), "bias_c");
  if (!back || !sc || !bc) return std::nullopt;
  auto scaled = m.emit1("Mul", {*back, *sc}, {}, "scaled");
  if (!scaled) return std::nullopt;
  return one(m.emit1("Add", {*scaled, *bc}));
}

template <const char* Type>
Terms reduce(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  bool given = false;
  auto axes = axesOf(m, 1, given);
  if (!axes) return std::nullopt;
  if (axes->empty() && m.intAttr("noop_with_empty_axes", 0) != 0) return std::vector<Term>{*x};
  return one(m.emit1(Type, {*x, Attribute(*axes)}, {{"keep_dims", m.intAttr("keepdims", 1) != 0}}));
}

// ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp: ReduceSum between an
// elementwise op before it (Abs, x·x, Exp) and one after (Sqrt, Log), as torch.norm and logsumexp
// export. With noop_with_empty_axes and no axes only the elementwise ops remain.
enum class Before { None, Abs, Square, Exp };
enum class After { None, Sqrt, Log };
template <Before B, After A>
Terms sumBetween(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  bool given = false;
  auto axes = axesOf(m, 1, given);
  if (!axes) return std::nullopt;
  std::optional<Term> t = *x;
  if (B == Before::Abs) t = m.emit1("Abs", {*t}, {}, "abs");
  if (B == Before::Square) t = m.emit1("Mul", {*t, *t}, {}, "square");
  if (B == Before::Exp) t = m.emit1("Exp", {*t}, {}, "exp");
  if (!t) return std::nullopt;
  const bool noop = axes->empty() && m.intAttr("noop_with_empty_axes", 0) != 0;
  if (!noop) {
    t = m.emit1("ReduceSum", {*t, Attribute(*axes)}, {{"keep_dims", m.intAttr("keepdims", 1) != 0}},
                A == After::None ? "" : "sum");
    if (!t) return std::nullopt;
  }
  if (A == After::Sqrt) t = m.emit1("Sqrt", {*t});
  if (A == After::Log) t = m.emit1("Log", {*t});
  return one(t);
}

}  // namespace

void addNormalizationMappers(MapperTable& table) {
  table.insert({
      {"Softmax", softmax},
      {"LogSoftmax", logSoftmax},
      {"LayerNormalization", layerNormalization},
      {"ReduceMean", reduce<kReduceMean>},
      {"ReduceSum", reduce<kReduceSum>},
      {"ReduceMax", reduce<kReduceMax>},
      {"ReduceMin", reduce<kReduceMin>},
      {"ReduceL1", sumBetween<Before::Abs, After::None>},
      {"ReduceL2", sumBetween<Before::Square, After::Sqrt>},
      {"ReduceSumSquare", sumBetween<Before::Square, After::None>},
      {"ReduceLogSum", sumBetween<Before::None, After::Log>},
      {"ReduceLogSumExp", sumBetween<Before::Exp, After::Log>},
      {"BatchNormalization", batchNormalization},
      {"InstanceNormalization", instanceNormalization},
      {"GroupNormalization", groupNormalization},
  });
}

}  // namespace irc::onnx_import
