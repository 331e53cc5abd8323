#include "frontends/onnx/mapping/mapping_common.h"

namespace irc::onnx_import {
namespace {

// ---- data movement ----

Terms gather(NodeMapping& m) {
  auto data = need(m, 0), indices = need(m, 1);
  if (!data || !indices) return std::nullopt;
  int64_t axis = m.intAttr("axis", 0);
  int64_t rank = static_cast<int64_t>(shapeOf(m, *data).size());
  auto n = normalizeAxis(axis, rank);
  if (!n) {
    m.error(fmt::format("axis {} is out of range for data of rank {}", axis, rank));
    return std::nullopt;
  }
  // ONNX counts negative indices from the end; irc's Gather takes them in [0, dim): constant
  // indices are normalized here (computed ones are the model's to keep in range).
  if (indices->isConstant() && m.numbersKnown(*indices)) {
    auto values = m.constantInput(1, "indices");
    if (!values) return std::nullopt;
    int64_t dim = shapeOf(m, *data)[*n];
    for (double& v : values->data) {
      if (v < -dim || v >= dim) {
        m.error(fmt::format("index {} is out of range for dim {} of size {}", v, *n, dim));
        return std::nullopt;
      }
      if (v < 0) v += dim;
    }
    indices = m.constant(m.typeOf(*indices), *values, "indices");
  }
  return one(m.emit1("Gather", {*data, *indices, Attribute(*n)}));
}

// GatherElements, GatherND: the same ops (GatherND as MindSpore's GatherNd).
Terms gatherElements(NodeMapping& m) {
  auto data = need(m, 0), indices = need(m, 1);
  if (!data || !indices) return std::nullopt;
  return one(m.emit1("GatherElements", {*data, *indices}, {{"axis", m.intAttr("axis", 0)}}));
}

Terms gatherND(NodeMapping& m) {
  auto data = need(m, 0), indices = need(m, 1);
  if (!data || !indices) return std::nullopt;
  return one(m.emit1("GatherNd", {*data, *indices}, {{"batch_dims", m.intAttr("batch_dims", 0)}}));
}

// CumSum: the axis input must be a constant.
Terms cumSum(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto axis = m.constantInput(1, "axis");
  if (!axis) return std::nullopt;
  if (axis->data.size() != 1) {
    m.error(fmt::format("axis has {} elements; CumSum's axis is one number", axis->data.size()));
    return std::nullopt;
  }
  return one(m.emit1("CumSum", {*x, Attribute(static_cast<int64_t>(axis->data[0]))},
                     {{"exclusive", m.intAttr("exclusive", 0) != 0}, {"reverse", m.intAttr("reverse", 0) != 0}}));
}

// ArgMax, ArgMin: Argmax, Argmin (axis, keepdims, select_last_index).
template <const char* Type>
Terms argReduce(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  return one(m.emit1(Type, {*x},
                     {{"axis", m.intAttr("axis", 0)},
                      {"keep_dims", m.intAttr("keepdims", 1) != 0},
                      {"select_last_index", m.intAttr("select_last_index", 0) != 0}}));
}
constexpr char kArgmax[] = "Argmax", kArgmin[] = "Argmin";

// TopK(x, K): TopK with k the constant K (irc's axis and largest for ONNX's), its indices cast
// from MindSpore's int32 to ONNX's int64.
Terms topK(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto k = m.constantInput(1, "K");
  if (!k) return std::nullopt;
  if (k->data.size() != 1) {
    m.error(fmt::format("K must hold one number; it has shape {}", formatShape(k->shape)));
    return std::nullopt;
  }
  auto out = m.emit(
      "TopK", {*x, Attribute(static_cast<int64_t>(k->data[0]))},
      {{"sorted", m.intAttr("sorted", 1) != 0}, {"axis", m.intAttr("axis", -1)}, {"largest", m.intAttr("largest", 1) != 0}});
  if (!out) return std::nullopt;
  auto indices = m.emit1("Cast", {(*out)[1], Attribute(DType::Int64)}, {}, "indices");
  if (!indices) return std::nullopt;
  return std::vector<Term>{(*out)[0], *indices};
}

// Pad: Pad with ONNX's pads [b0, b1, ..., a0, a1, ...] (over `axes` when given, opset 18) as
// (before, after) pairs, its mode (constant, reflect, edge, wrap) and the constant_value input
// (default 0).
Terms pad(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  std::string mode = m.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    m.error(fmt::format("pads in mode '{}'; valid: constant, reflect, edge, wrap", mode));
    return std::nullopt;
  }
  size_t rank = shapeOf(m, *x).size();
  IntTuple pads;
  if (m.opset() >= 11) {
    auto given = m.constantInput(1, "pads");
    if (!given) return std::nullopt;
    pads = toInts(*given);
  } else if (auto attr = m.intsAttr("pads")) {
    pads = *attr;
  }
  IntTuple axes;
  for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  if (m.input(3)) {
    auto given = m.constantInput(3, "axes");
    if (!given) return std::nullopt;
    axes = toInts(*given);
  }
  if (pads.size() != 2 * axes.size()) {
    m.error(fmt::format("pads {} must hold two entries per padded axis ({})", formatIntTuple(pads), axes.size()));
    return std::nullopt;
  }
  IntTuple paddings(2 * rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
    if (a < 0 || a >= static_cast<int64_t>(rank)) {
      m.error(fmt::format("axis {} is out of range for rank {}", axes[i], rank));
      return std::nullopt;
    }
    paddings[2 * a] = pads[i];
    paddings[2 * a + 1] = pads[i + axes.size()];
  }
  double value = m.opset() >= 11 ? 0.0 : m.floatAttr("value", 0.0);
  if (m.opset() >= 11 && m.input(2)) {
    auto given = m.constantInput(2, "constant_value");
    if (!given) return std::nullopt;
    if (!given->data.empty()) value = given->data[0];
  }
  return one(m.emit1("Pad", {*x}, {{"paddings", paddings}, {"value", value}, {"mode", mode}}));
}

// Einsum: the same op over its inputs.
Terms einsum(NodeMapping& m) {
  std::vector<Arg> args;
  for (size_t i = 0; i < m.inputCount(); ++i) {
    auto t = need(m, i);
    if (!t) return std::nullopt;
    args.push_back(*t);
  }
  return one(m.emit1("Einsum", std::move(args), {{"equation", m.stringAttr("equation", "")}}));
}

// ScatterElements, ScatterND (any reduction): ScatterElements, ScatterNd.
template <const char* Type>
Terms scatter(NodeMapping& m) {
  auto data = need(m, 0), indices = need(m, 1), updates = need(m, 2);
  if (!data || !indices || !updates) return std::nullopt;
  std::string reduction = m.stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min") {
    m.error(fmt::format("reduces its updates by '{}'; irc knows none, add, mul, max, min", reduction));
    return std::nullopt;
  }
  AttrMap attrs{{"reduction", reduction}};
  if (std::string_view(Type) == "ScatterElements") attrs["axis"] = m.intAttr("axis", 0);
  return one(m.emit1(Type, {*data, *indices, *updates}, std::move(attrs)));
}
constexpr char kScatterElements[] = "ScatterElements", kScatterNd[] = "ScatterNd";

Terms reshape(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  auto shapeValue = m.constantInput(1, "shape");
  if (!shapeValue) return std::nullopt;
  IntTuple target = toInts(*shapeValue);
  Shape in = shapeOf(m, *x);
  bool allowZero = m.intAttr("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1, total = 1;
  for (int64_t d : in) total *= d;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= in.size()) {
        m.error(fmt::format("shape entry {} is 0 (copy the input's dim) but the input has rank {}", i, in.size()));
        return std::nullopt;
      }
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (inferred >= 0) {
        m.error("the target shape has two -1 entries");
        return std::nullopt;
      }
      inferred = static_cast<int64_t>(i);
    } else if (target[i] < 0) {
      m.error(fmt::format("the target shape has the entry {}", target[i]));
      return std::nullopt;
    } else if (target[i] > 0 && known > kMaxTensorElements / target[i]) {
      // (known * target[i] would wrap around int64 before shape inference could say so.)
      m.error(fmt::format("the target shape {} has more than {} elements (docs/limits.md)", formatIntTuple(target),
                          kMaxTensorElements));
      return std::nullopt;
    } else {
      known *= target[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      m.error(fmt::format("cannot infer the -1 entry: {} elements do not divide into {}", total, known));
      return std::nullopt;
    }
    target[inferred] = total / known;
  }
  return one(m.emit1("Reshape", {*x, Attribute(target)}));
}

Terms flatten(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  Shape in = shapeOf(m, *x);
  // Flatten's axis is in [-rank, rank]: a negative one counts from the end of the input's dims.
  int64_t rank = static_cast<int64_t>(in.size()), given = m.intAttr("axis", 1);
  std::optional<int64_t> axis = given < 0 ? given + rank : given;
  if (*axis < 0 || *axis > rank) {
    m.error(fmt::format("axis {} is out of range for rank {} (valid: {} .. {})", given, rank, -rank, rank));
    return std::nullopt;
  }
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < in.size(); ++i) (static_cast<int64_t>(i) < *axis ? outer : inner) *= in[i];
  return one(m.emit1("Reshape", {*x, Attribute(IntTuple{outer, inner})}));
}

Terms transpose(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  IntTuple perm;
  if (auto p = m.intsAttr("perm")) {
    perm = *p;
  } else {
    for (int64_t d = static_cast<int64_t>(shapeOf(m, *x).size()) - 1; d >= 0; --d) perm.push_back(d);
  }
  return one(m.emit1("Transpose", {*x, Attribute(perm)}));
}

Terms concat(NodeMapping& m) {
  std::vector<Arg> args;
  for (size_t i = 0; i < m.inputCount(); ++i) {
    auto t = need(m, i);
    if (!t) return std::nullopt;
    if (!shapeOf(m, *t).empty() && [&] {
          int64_t n = 1;
          for (int64_t d : shapeOf(m, *t)) n *= d;
          return n;
        }() == 0)
      continue;  // exporters concatenate empty shape tensors; they add nothing
    args.push_back(*t);
  }
  if (args.size() == 1) return std::vector<Term>{std::get<Term>(args[0])};
  return one(m.emit1("Concat", std::move(args), {{"axis", m.intAttr("axis", 0)}}));
}

Terms split(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  int64_t outputs = m.node().output_size();
  int64_t axis = m.intAttr("axis", 0);
  std::optional<IntTuple> sizes = m.intsAttr("split");
  if (!sizes && m.input(1)) {
    auto v = m.constantInput(1, "split");
    if (!v) return std::nullopt;
    sizes = toInts(*v);
  }
  Shape shape = shapeOf(m, *x);
  auto dimIndex = normalizeAxis(axis, static_cast<int64_t>(shape.size()));
  if (!dimIndex) {
    m.error(fmt::format("axis {} is out of range for rank {}", axis, shape.size()));
    return std::nullopt;
  }
  const int64_t dim = shape[*dimIndex];
  if (!sizes && outputs > 0 && dim % outputs != 0) {
    // Opset 18's num_outputs on an indivisible dim: chunks of ceil(dim / n), the last smaller.
    int64_t chunk = (dim + outputs - 1) / outputs;
    sizes = IntTuple(outputs, chunk);
    sizes->back() = dim - chunk * (outputs - 1);
  }
  if (sizes) {
    int64_t total = 0;
    for (int64_t part : *sizes) total += part;
    if (static_cast<int64_t>(sizes->size()) != outputs || total != dim ||
        std::any_of(sizes->begin(), sizes->end(), [](int64_t part) { return part <= 0; })) {
      m.error(
          fmt::format("splits dim {} of size {} into parts {} for {} outputs", *dimIndex, dim, fmt::join(*sizes, ", "), outputs));
      return std::nullopt;
    }
    bool equal = std::all_of(sizes->begin(), sizes->end(), [&](int64_t part) { return part == sizes->front(); });
    if (!equal) {
      // irc's Split makes equal parts: unequal ones are windows of the input, one Slice each
      // (`<node>/part<i>`).
      std::vector<Term> parts;
      int64_t offset = 0;
      for (size_t i = 0; i < sizes->size(); ++i) {
        IntTuple begin(shape.size(), 0), count(shape.begin(), shape.end());
        begin[*dimIndex] = offset;
        count[*dimIndex] = (*sizes)[i];
        offset += (*sizes)[i];
        auto part = m.emit1("Slice", {*x, Attribute(begin), Attribute(count)}, {}, fmt::format("part{}", i));
        if (!part) return std::nullopt;
        parts.push_back(*part);
      }
      return parts;
    }
  }
  return m.emit("Split", {*x}, {{"axis", axis}, {"output_num", outputs}});
}

// Unsqueeze: one ExpandDims per new axis, lowest first (each counted in the final rank).
Terms unsqueeze(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  bool given = false;
  auto axes = axesOf(m, 1, given);
  if (!axes) return std::nullopt;
  int64_t outRank = static_cast<int64_t>(shapeOf(m, *x).size() + axes->size());
  IntTuple sorted;
  for (int64_t a : *axes) {
    auto n = normalizeAxis(a, outRank);
    if (!n) {
      m.error(fmt::format("axis {} is out of range for the result's rank {}", a, outRank));
      return std::nullopt;
    }
    sorted.push_back(*n);
  }
  std::sort(sorted.begin(), sorted.end());
  std::optional<Term> acc = *x;
  for (size_t i = 0; acc && i < sorted.size(); ++i)
    acc = m.emit1("ExpandDims", {*acc, Attribute(sorted[i])}, {}, i + 1 == sorted.size() ? "" : fmt::format("ExpandDims{}", i));
  return one(acc);
}

Terms squeeze(NodeMapping& m) {
  auto x = need(m, 0);
  if (!x) return std::nullopt;
  bool given = false;
  auto axes = axesOf(m, 1, given);
  if (!axes) return std::nullopt;
  return one(m.emit1("Squeeze", {*x}, {{"axis", *axes}}));
}

}  // namespace

void addDataMovementMappers(MapperTable& table) {
  table.insert({
      {"Gather", gather},
      {"Reshape", reshape},
      {"Flatten", flatten},
      {"Transpose", transpose},
      {"Concat", concat},
      {"Split", split},
      {"Unsqueeze", unsqueeze},
      {"Squeeze", squeeze},
      {"GatherElements", gatherElements},
      {"GatherND", gatherND},
      {"CumSum", cumSum},
      {"ArgMax", argReduce<kArgmax>},
      {"ArgMin", argReduce<kArgmin>},
      {"Einsum", einsum},
      {"ScatterElements", scatter<kScatterElements>},
      {"ScatterND", scatter<kScatterNd>},
      {"TopK", topK},
      {"Pad", pad},
  });
}

}  // namespace irc::onnx_import
