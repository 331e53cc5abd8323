#include "frontends/onnx/mapping/mapping_common.h"

namespace irc::onnx_import {
namespace {

// ---- constants and shape-only ops, folded here ----

Terms constantNode(NodeMapping& m) {
  const onnx::AttributeProto* a = nullptr;
  for (const char* key : {"value", "value_float", "value_floats", "value_int", "value_ints"})
    if ((a = m.attr(key))) break;
  if (!a) {
    m.error("has no value irc reads (value, value_float(s), value_int(s); sparse and string values are not held)");
    return std::nullopt;
  }
  TensorValue data;
  TensorType type;
  if (a->name() == "value") {
    std::string problem;
    auto t = typeOfTensor(a->t(), problem);
    auto v = t ? valueOfTensor(a->t(), problem) : std::nullopt;
    if (!v) {
      m.error(problem);
      return std::nullopt;
    }
    type = *t;
    data = *v;
  } else if (a->name() == "value_float") {
    type = {DType::Float32, {}};
    data = {{}, {a->f()}};
  } else if (a->name() == "value_int") {
    type = {DType::Int64, {}};
    data = {{}, {static_cast<double>(a->i())}};
  } else if (a->name() == "value_floats") {
    type = {DType::Float32, {a->floats_size()}};
    data = {type.shape, std::vector<double>(a->floats().begin(), a->floats().end())};
  } else {
    type = {DType::Int64, {a->ints_size()}};
    data = {type.shape, {}};
    for (int64_t v : a->ints()) data.data.push_back(static_cast<double>(v));
  }
  return std::vector<Term>{m.constant(type, data, "")};
}

Terms shape(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  Shape s = shapeOf(m, *x);
  int64_t rank = static_cast<int64_t>(s.size());
  auto clampAxis = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
  int64_t begin = clampAxis(m.intAttr("start", 0)), end = clampAxis(m.intAttr("end", rank));
  IntTuple dims(s.begin() + begin, s.begin() + std::max(begin, end));
  return std::vector<Term>{m.constant({DType::Int64, {static_cast<int64_t>(dims.size())}}, intVector(dims), "")};
}

Terms size(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : shapeOf(m, *x)) n *= d;
  return std::vector<Term>{m.constant({DType::Int64, {}}, {{}, {static_cast<double>(n)}}, "")};
}

Terms constantOfShape(NodeMapping& m) {
  auto dims = m.constantInput(0, "shape");
  if (!dims) return std::nullopt;
  TensorType type{DType::Float32, toInts(*dims)};
  double fill = 0;
  if (const auto* a = m.attr("value")) {
    std::string problem;
    auto t = typeOfTensor(a->t(), problem);
    auto v = t ? valueOfTensor(a->t(), problem) : std::nullopt;
    if (!v || v->data.size() != 1) {
      m.error(v ? "its value must hold one element" : problem);
      return std::nullopt;
    }
    type.dtype = t->dtype;
    fill = v->data[0];
  }
  TensorValue data = TensorValue::zeros(type.shape);
  std::fill(data.data.begin(), data.data.end(), fill);
  return std::vector<Term>{m.constant(type, data, "")};
}

// Range: folded. Its length is (limit - start) / delta, so a start, limit or delta computed at run
// time would give a tensor whose shape depends on values: not a static-shape program.
Terms range(NodeMapping& m) {
  for (size_t i = 0; i < 3; ++i)
    if (auto t = m.input(i); t && !t->isConstant()) {
      m.error(
          fmt::format("its input {} ('{}') is computed at run time, so its length would depend on values; irc compiles "
                      "static shapes (bind the dims it comes from with --dim, or compute it from shapes only)",
                      i, m.node().input(i)));
      return std::nullopt;
    }
  auto start = m.constantInput(0, "start"), limit = m.constantInput(1, "limit"), delta = m.constantInput(2, "delta");
  if (!start || !limit || !delta) return std::nullopt;
  double s = start->data.at(0), l = limit->data.at(0), d = delta->data.at(0);
  if (d == 0) {
    m.error("delta is 0");
    return std::nullopt;
  }
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)));
  TensorValue data{{n}, {}};
  for (int64_t i = 0; i < n; ++i) data.data.push_back(s + i * d);
  return std::vector<Term>{m.constant({m.typeOf(*m.input(0)).dtype, {n}}, data, "")};
}

// What a Slice node keeps of each dim of x: its first index, step and element count (every dim
// of x; those the node does not name whole with step 1). Nullopt when the node is malformed
// (reported).
struct SliceWindow {
  std::vector<int64_t> begin, step, count;
};

std::optional<SliceWindow> sliceWindow(NodeMapping& m, const Shape& s) {
  auto starts = m.constantInput(1, "starts"), ends = m.constantInput(2, "ends");
  if (!starts || !ends) return std::nullopt;
  int64_t rank = static_cast<int64_t>(s.size());
  IntTuple axes, steps(starts->data.size(), 1);
  if (m.input(3)) {
    auto a = m.constantInput(3, "axes");
    if (!a) return std::nullopt;
    axes = toInts(*a);
  } else {
    for (size_t i = 0; i < starts->data.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (m.input(4)) {
    auto st = m.constantInput(4, "steps");
    if (!st) return std::nullopt;
    steps = toInts(*st);
  }
  if (axes.size() != starts->data.size() || ends->data.size() != starts->data.size() || steps.size() != starts->data.size()) {
    m.error("starts, ends, axes and steps have different lengths");
    return std::nullopt;
  }
  SliceWindow w{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1), std::vector<int64_t>(s.begin(), s.end())};
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = normalizeAxis(axes[i], rank);
    if (!axis || steps[i] == 0) {
      m.error(fmt::format("axis {} or step {} is out of range", axes[i], steps[i]));
      return std::nullopt;
    }
    int64_t dim = s[*axis], st = steps[i];
    // ONNX clamps starts and ends into the dim (INT64_MAX and INT64_MIN mean "to the end").
    auto clampIndex = [&](double v, int64_t lo, int64_t hi) {
      int64_t k = v < -9.2e18 ? -dim - 1 : v > 9.2e18 ? dim : static_cast<int64_t>(v);
      if (k < 0) k += dim;
      return std::clamp(k, lo, hi);
    };
    int64_t b = st > 0 ? clampIndex(starts->data[i], 0, dim) : clampIndex(starts->data[i], -1, dim - 1);
    int64_t e = st > 0 ? clampIndex(ends->data[i], 0, dim) : clampIndex(ends->data[i], -1, dim - 1);
    w.begin[*axis] = b;
    w.step[*axis] = st;
    w.count[*axis] = st > 0 ? std::max<int64_t>(0, (e - b + st - 1) / st) : std::max<int64_t>(0, (b - e - st - 1) / -st);
  }
  return w;
}

// A strided slice of a computed tensor (GPT-J's rotate_every_two `x[..., ::2]`, Swin's
// `x[:, 0::2, 0::2, :]`): the dims of step 1 as one Slice, then each strided dim as a Gather of
// the positions it keeps (torch's index_select), which irc shards and verifies as any Gather.
Terms stridedSliceOfComputed(NodeMapping& m, const Term& x, const Shape& s, const SliceWindow& w) {
  int64_t rank = static_cast<int64_t>(s.size());
  std::vector<int64_t> windowBegin(rank, 0), windowCount(s.begin(), s.end());
  bool window = false;
  for (int64_t d = 0; d < rank; ++d)
    if (w.step[d] == 1 && (w.begin[d] != 0 || w.count[d] != s[d])) {
      windowBegin[d] = w.begin[d];
      windowCount[d] = w.count[d];
      window = true;
    }
  std::optional<Term> current = x;
  if (window) current = m.emit1("Slice", {*current, Attribute(IntTuple(windowBegin)), Attribute(IntTuple(windowCount))});
  for (int64_t d = 0; d < rank; ++d) {
    if (w.step[d] == 1) continue;
    TensorValue positions = TensorValue::zeros({w.count[d]});
    for (int64_t i = 0; i < w.count[d]; ++i) positions.data[i] = static_cast<double>(w.begin[d] + i * w.step[d]);
    if (!current) return std::nullopt;
    Term indices = m.constant({DType::Int64, {w.count[d]}}, positions, "positions");
    current = m.emit1("Gather", {*current, indices, Attribute(d)});
  }
  if (!current) return std::nullopt;
  return one(*current);
}

// A strided slice of a constant, folded.
Terms foldStridedSlice(NodeMapping& m, const Term& x, const Shape& s, const SliceWindow& w) {
  const TensorValue* data = m.dataOf(x);
  if (!data) return std::nullopt;
  int64_t rank = static_cast<int64_t>(s.size());
  TensorValue out = TensorValue::zeros(w.count);
  auto strides = stridesOf(s);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < out.size(); ++k) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += (w.begin[d] + idx[d] * w.step[d]) * strides[d];
    out.data[k] = data->data[offset];
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++idx[d] < w.count[d]) break;
      idx[d] = 0;
    }
  }
  return std::vector<Term>{m.constant({m.typeOf(x).dtype, w.count}, out, "")};
}

// Slice: with steps of 1 irc's Slice(x, begin, size) (folded when x is constant: a mask buffer
// cut to the sequence length, a shape's tail); other steps of a constant folded here, of a
// computed tensor a Slice of its contiguous dims and a Gather per strided dim.
Terms slice(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  Shape s = shapeOf(m, *x);
  std::optional<SliceWindow> w = sliceWindow(m, s);
  if (!w) return std::nullopt;
  if (std::all_of(w->step.begin(), w->step.end(), [](int64_t st) { return st == 1; }))
    return one(m.emit1("Slice", {*x, Attribute(IntTuple(w->begin)), Attribute(IntTuple(w->count))}));
  if (!x->isConstant()) return stridedSliceOfComputed(m, *x, s, *w);
  return foldStridedSlice(m, *x, s, *w);
}

// Expand: irc's BroadcastTo to numpy's broadcast of x's shape and the requested one (ONNX's
// Expand broadcasts both ways: a requested 1 keeps x's dim).
Terms expand(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto requested = m.constantInput(1, "shape");
  if (!requested) return std::nullopt;
  Shape want = toInts(*requested), have = shapeOf(m, *x);
  Shape target(std::max(want.size(), have.size()));
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t a = i < have.size() ? have[have.size() - 1 - i] : 1, b = i < want.size() ? want[want.size() - 1 - i] : 1;
    if (a != b && a != 1 && b != 1) {
      m.error(fmt::format("x of shape {} does not broadcast with the shape {}", formatShape(have), formatShape(want)));
      return std::nullopt;
    }
    target[target.size() - 1 - i] = a == 1 ? b : a;
  }
  return one(m.emit1("BroadcastTo", {*x, Attribute(IntTuple(target))}));
}

// The dims a Resize node resizes: its `axes` (opset 18), else every dim.
std::optional<IntTuple> resizedAxes(NodeMapping& m, int64_t rank) {
  IntTuple axes;
  if (auto given = m.intsAttr("axes")) {
    for (int64_t a : *given) {
      if (a < -rank || a >= rank) {
        m.error(fmt::format("axis {} is out of range for rank {}", a, rank));
        return std::nullopt;
      }
      axes.push_back(a < 0 ? a + rank : a);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  return axes;
}

// A Resize node's output shape: its `sizes`, or each resized dim times its scale, which must
// give a whole size.
std::optional<IntTuple> resizedShape(NodeMapping& m, const Shape& in, bool legacy) {
  std::optional<IntTuple> axes = resizedAxes(m, static_cast<int64_t>(in.size()));
  if (!axes) return std::nullopt;
  const size_t scalesInput = legacy ? 1 : 2, sizesInput = 3;
  std::optional<TensorValue> scales, sizes;
  if (!legacy && m.input(sizesInput)) {
    sizes = m.constantInput(sizesInput, "sizes");
    if (!sizes) return std::nullopt;
    if (sizes->data.empty()) sizes.reset();
  }
  if (!sizes && m.input(scalesInput)) {
    scales = m.constantInput(scalesInput, "scales");
    if (!scales) return std::nullopt;
  } else if (!sizes && legacy && m.attr("scales")) {
    TensorValue v{{}, {}};
    for (float f : m.attr("scales")->floats()) v.data.push_back(f);
    v.shape = {static_cast<int64_t>(v.data.size())};
    scales = v;
  }
  const TensorValue* given = sizes ? &*sizes : scales ? &*scales : nullptr;
  if (!given || given->data.size() != axes->size()) {
    m.error(fmt::format("needs scales or sizes with one entry per resized dim ({}); it has {}", axes->size(),
                        given ? given->data.size() : 0));
    return std::nullopt;
  }
  IntTuple out(in.begin(), in.end());
  for (size_t i = 0; i < axes->size(); ++i) {
    const int64_t d = (*axes)[i];
    if (sizes) {
      out[d] = static_cast<int64_t>(sizes->data[i]);
      continue;
    }
    const double scale = scales->data[i];
    out[d] = static_cast<int64_t>(std::floor(static_cast<double>(in[d]) * scale));
    if (out[d] < 1 ||
        std::fabs(static_cast<double>(out[d]) - static_cast<double>(in[d]) * scale) > 1e-6 * static_cast<double>(out[d])) {
      m.error(
          fmt::format("scale {} of dim {} ({} elements) gives {} elements; irc resizes by output over input size, so "
                      "the scale must give a whole size (write the node with sizes instead)",
                      scale, d, in[d], static_cast<double>(in[d]) * scale));
      return std::nullopt;
    }
  }
  return out;
}

// Resize (opset 11 on) and Upsample / Resize-10: irc's Resize to the output shape. The output
// shape is `sizes`, or each dim times its scale rounded down; irc's scale is output over input
// size, so a given scale must be that to float32's precision (a scale of 2 on a dim of 5 is
// 10 / 5; a scale of 1.5 on 5 would be 7 / 5 = 1.4 in irc: an error asking for sizes). opset 18's `axes` names the
// dims the scales or sizes are for. Before opset 11 the coordinates are asymmetric and nearest
// rounds down (onnxruntime's Upsample).
Terms resize(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  const bool legacy = m.node().op_type() == "Upsample" || m.opset() < 11;
  std::string mode = m.stringAttr("mode", "nearest");
  std::string coordinates = legacy ? "asymmetric" : m.stringAttr("coordinate_transformation_mode", "half_pixel");
  std::string nearest = legacy ? "floor" : m.stringAttr("nearest_mode", "round_prefer_floor");
  if (coordinates == "tf_crop_and_resize") {
    m.error("has coordinate_transformation_mode 'tf_crop_and_resize' (a crop by its roi); irc resizes whole dims");
    return std::nullopt;
  }
  if (m.intAttr("antialias", 0) != 0) {
    m.error("has antialias 1; irc resizes without an antialiasing filter");
    return std::nullopt;
  }
  if (std::string policy = m.stringAttr("keep_aspect_ratio_policy", "stretch"); policy != "stretch") {
    m.error(fmt::format("has keep_aspect_ratio_policy '{}'; irc resizes by the sizes as given (stretch)", policy));
    return std::nullopt;
  }
  if (mode == "linear" || mode == "bilinear" || mode == "trilinear") mode = "linear";  // Upsample-7's spellings
  std::optional<IntTuple> out = resizedShape(m, shapeOf(m, *x), legacy);
  if (!out) return std::nullopt;
  return one(m.emit1("Resize", {*x},
                     {{"sizes", *out},
                      {"mode", mode},
                      {"coordinate_transformation_mode", coordinates},
                      {"nearest_mode", nearest},
                      {"cubic_coeff_a", m.floatAttr("cubic_coeff_a", -0.75)},
                      {"exclude_outside", m.intAttr("exclude_outside", 0) != 0}}));
}

// OneHot(indices, depth, values = [off, on], axis): irc's OneHot with depth and the two values
// constants (float indices cast to int64 first). ONNX counts a negative index from depth; irc's OneHot does not, so the indices
// are wrapped first by Select(indices < 0, indices + depth, indices) (folded for constant indices).
Terms oneHotNode(NodeMapping& m) {
  auto indices = need(m, 0);
  auto depth = m.constantInput(1, "depth"), values = m.constantInput(2, "values");
  if (!indices || !depth || !values) return std::nullopt;
  if (depth->data.size() != 1 || values->data.size() != 2) {
    m.error(fmt::format("depth has {} elements and values {}; OneHot takes one depth and values [off, on]", depth->data.size(),
                        values->data.size()));
    return std::nullopt;
  }
  const auto d = static_cast<int64_t>(depth->data[0]);
  const int64_t rank = static_cast<int64_t>(shapeOf(m, *indices).size());
  int64_t axis = m.intAttr("axis", -1);
  if (axis < -rank - 1 || axis > rank) {
    m.error(fmt::format("axis {} is out of range for indices of rank {} (valid: {} .. {})", axis, rank, -rank - 1, rank));
    return std::nullopt;
  }
  if (axis < 0) axis += rank + 1;
  if (axis == rank) axis = -1;
  if (!isInteger(m.typeOf(*indices).dtype)) {  // ONNX takes any numeric indices, cast to int64
    indices = m.emit1("Cast", {*indices, Attribute(DType::Int64)}, {}, "indices");
    if (!indices) return std::nullopt;
  }
  const DType indexType = m.typeOf(*indices).dtype, valueType = m.typeOf(*m.input(2)).dtype;
  auto negative = m.emit1("Less", {*indices, Attribute(ScalarTensor{indexType, 0.0})}, {}, "negative");
  auto shifted = m.emit1("Add", {*indices, Attribute(ScalarTensor{indexType, static_cast<double>(d)})}, {}, "shifted");
  if (!negative || !shifted) return std::nullopt;
  auto wrapped = m.emit1("Select", {*negative, *shifted, *indices}, {}, "wrapped");
  if (!wrapped) return std::nullopt;
  return one(m.emit1("OneHot",
                     {*wrapped, Attribute(d), Attribute(ScalarTensor{valueType, values->data[1]}),
                      Attribute(ScalarTensor{valueType, values->data[0]})},
                     {{"axis", axis}}));
}

// DepthToSpace and SpaceToDepth (pixel shuffle): Reshape to 6 dims, Transpose, Reshape back, as
// ONNX defines them (DepthToSpace in DCR or CRD mode).
Terms depthSpace(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  const Shape xs = shapeOf(m, *x);
  const int64_t b = m.intAttr("blocksize", 0);
  const bool toSpace = m.node().op_type() == "DepthToSpace";
  if (xs.size() != 4 || b < 1 || (toSpace ? xs[1] % (b * b) != 0 : xs[2] % b != 0 || xs[3] % b != 0)) {
    m.error(fmt::format("has x of shape {} and blocksize {}; {} takes [N, C, H, W] with {} divisible by the blocksize{}",
                        formatShape(xs), b, m.node().op_type(), toSpace ? "C" : "H and W", toSpace ? " squared" : ""));
    return std::nullopt;
  }
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  IntTuple split, perm, merged;
  if (toSpace && m.stringAttr("mode", "DCR") == "CRD") {
    split = {n, c / (b * b), b, b, h, w}, perm = {0, 1, 4, 2, 5, 3}, merged = {n, c / (b * b), h * b, w * b};
  } else if (toSpace) {
    split = {n, b, b, c / (b * b), h, w}, perm = {0, 3, 4, 1, 5, 2}, merged = {n, c / (b * b), h * b, w * b};
  } else {
    split = {n, c, h / b, b, w / b, b}, perm = {0, 3, 5, 1, 2, 4}, merged = {n, c * b * b, h / b, w / b};
  }
  auto blocks = m.emit1("Reshape", {*x, Attribute(split)}, {}, "blocks");
  if (!blocks) return std::nullopt;
  auto moved = m.emit1("Transpose", {*blocks, Attribute(perm)}, {}, "moved");
  if (!moved) return std::nullopt;
  return one(m.emit1("Reshape", {*moved, Attribute(merged)}));
}

}  // namespace

void addShapeOpMappers(MapperTable& table) {
  table.insert({
      {"Constant", constantNode},
      {"Shape", shape},
      {"Size", size},
      {"ConstantOfShape", constantOfShape},
      {"Range", range},
      {"Slice", slice},
      {"Expand", expand},
      {"Resize", resize},
      {"Upsample", resize},
      {"OneHot", oneHotNode},
      {"DepthToSpace", depthSpace},
      {"SpaceToDepth", depthSpace},
  });
}

}  // namespace irc::onnx_import
