#include "ir/shape_inference.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/limits.h"

namespace irc {
namespace {

// Failures carry their location hint; `fail` keeps each rule to one line.
InferError fail(std::string message, int operandIndex = -1, std::string attr = "") {
  return {std::move(message), operandIndex, std::move(attr)};
}

int64_t intAttr(const AttrMap& attrs, const char* name) { return std::get<int64_t>(attrs.at(name)); }
bool boolAttr(const AttrMap& attrs, const char* name) { return std::get<bool>(attrs.at(name)); }

IntTuple asTuple(const Attribute& a) {
  if (auto* i = std::get_if<int64_t>(&a)) return {*i};
  return std::get<IntTuple>(a);
}

std::string typeText(const TensorType& t) {
  return fmt::format("{} {}", modelName(t.dtype), formatShape(t.shape));
}

// numpy broadcasting of two shapes; nullopt when a pair of dims is incompatible.
std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

using Result = InferResult;

Result inferMatMul(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  const TensorType& w = *in[1].tensor;
  if (x.shape.size() != 2) return fail(fmt::format("MatMul takes 2-d operands; x has shape {}", formatShape(x.shape)), 0);
  if (w.shape.size() != 2) return fail(fmt::format("MatMul takes 2-d operands; w has shape {}", formatShape(w.shape)), 1);
  if (x.dtype != w.dtype)
    return fail(fmt::format("operand dtypes differ: {} and {}", modelName(x.dtype), modelName(w.dtype)), 1);
  bool ta = boolAttr(attrs, "transpose_a"), tb = boolAttr(attrs, "transpose_b");
  int64_t m = ta ? x.shape[1] : x.shape[0], kx = ta ? x.shape[0] : x.shape[1];
  int64_t kw = tb ? w.shape[1] : w.shape[0], n = tb ? w.shape[0] : w.shape[1];
  if (kx != kw)
    return fail(fmt::format("contracted dims differ: x {}{} contracts {}, w {}{} contracts {}", formatShape(x.shape),
                            ta ? " (transposed)" : "", kx, formatShape(w.shape), tb ? " (transposed)" : "", kw),
                1);
  return std::vector<TensorType>{{x.dtype, {m, n}}};
}

Result inferBatchMatMul(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  const TensorType& w = *in[1].tensor;
  if (x.shape.size() < 2) return fail(fmt::format("BatchMatMul needs operands of rank >= 2; x has shape {}", formatShape(x.shape)), 0);
  if (w.shape.size() < 2) return fail(fmt::format("BatchMatMul needs operands of rank >= 2; w has shape {}", formatShape(w.shape)), 1);
  if (x.dtype != w.dtype)
    return fail(fmt::format("operand dtypes differ: {} and {}", modelName(x.dtype), modelName(w.dtype)), 1);
  bool ta = boolAttr(attrs, "transpose_a"), tb = boolAttr(attrs, "transpose_b");
  size_t rx = x.shape.size(), rw = w.shape.size();
  int64_t m = ta ? x.shape[rx - 1] : x.shape[rx - 2], kx = ta ? x.shape[rx - 2] : x.shape[rx - 1];
  int64_t kw = tb ? w.shape[rw - 1] : w.shape[rw - 2], n = tb ? w.shape[rw - 2] : w.shape[rw - 1];
  if (kx != kw)
    return fail(fmt::format("contracted dims differ: x {} contracts {}, w {} contracts {}", formatShape(x.shape), kx,
                            formatShape(w.shape), kw),
                1);
  Shape bx(x.shape.begin(), x.shape.end() - 2), bw(w.shape.begin(), w.shape.end() - 2);
  auto batch = broadcastShapes(bx, bw);
  if (!batch)
    return fail(fmt::format("batch dims {} and {} do not broadcast", formatShape(bx), formatShape(bw)), 1);
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  return std::vector<TensorType>{{x.dtype, out}};
}

Result inferBroadcast(const OpDef& def, const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  TensorType y;
  if (in[1].tensor) {
    y = *in[1].tensor;
  } else {
    const auto& s = std::get<ScalarTensor>(*in[1].constant);
    y = {s.dtype, {}};
  }
  if (x.dtype != y.dtype)
    return fail(fmt::format("{} operands have different dtypes: {} and {}", def.type, modelName(x.dtype), modelName(y.dtype)), 1);
  auto out = broadcastShapes(x.shape, y.shape);
  if (!out)
    return fail(fmt::format("shapes {} and {} do not broadcast (numpy rules: trailing dims equal or 1)",
                            formatShape(x.shape), formatShape(y.shape)),
                1);
  return std::vector<TensorType>{{def.boolResult ? DType::Bool : x.dtype, *out}};
}

// Where's cond ? x : y: cond is Bool, x and y (either may be a scalar constant) share a dtype,
// and all three broadcast together.
Result inferSelect(const std::vector<InferOperand>& in) {
  std::vector<TensorType> types;
  for (const InferOperand& o : in)
    types.push_back(o.tensor ? *o.tensor : TensorType{std::get<ScalarTensor>(*o.constant).dtype, {}});
  if (types[0].dtype != DType::Bool)
    return fail(fmt::format("Select's cond must be bool; got {}", modelName(types[0].dtype)), 0);
  if (types[1].dtype != types[2].dtype)
    return fail(fmt::format("Select's x and y have different dtypes: {} and {}", modelName(types[1].dtype),
                            modelName(types[2].dtype)),
                2);
  Shape out = types[0].shape;
  for (int i : {1, 2}) {
    auto both = broadcastShapes(out, types[i].shape);
    if (!both)
      return fail(fmt::format("shapes {} and {} do not broadcast (numpy rules: trailing dims equal or 1)", formatShape(out),
                              formatShape(types[i].shape)),
                  i);
    out = *both;
  }
  return std::vector<TensorType>{{types[1].dtype, out}};
}

// An opaque op's result is what its attributes say (ONNX's shape inference found it).
Result inferOpaque(const AttrMap& attrs) {
  auto dtype = parseDType(std::get<std::string>(attrs.at("dtype")));
  if (!dtype)
    return fail(fmt::format("dtype '{}' is not an irc dtype", std::get<std::string>(attrs.at("dtype"))), -1, "dtype");
  const Attribute& shape = attrs.at("shape");
  Shape out = std::holds_alternative<int64_t>(shape) ? Shape{std::get<int64_t>(shape)} : std::get<IntTuple>(shape);
  for (int64_t d : out)
    if (d < 0) return fail(fmt::format("shape {} has a negative dim", formatShape(out)), -1, "shape");
  return std::vector<TensorType>{{*dtype, out}};
}

Result inferSlice(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  const auto& begin = std::get<IntTuple>(*in[1].constant);
  const auto& size = std::get<IntTuple>(*in[2].constant);
  size_t rank = x.shape.size();
  if (begin.size() != rank) return fail(fmt::format("begin has {} entries; x has rank {}", begin.size(), rank), 1);
  if (size.size() != rank) return fail(fmt::format("size has {} entries; x has rank {}", size.size(), rank), 2);
  for (size_t i = 0; i < rank; ++i)
    if (begin[i] < 0 || size[i] < 0 || begin[i] + size[i] > x.shape[i])
      return fail(fmt::format("dim {}: [{}, {} + {}) does not fit in size {} (begin >= 0, size >= 0, begin + size <= the dim)",
                              i, begin[i], begin[i], size[i], x.shape[i]),
                  begin[i] < 0 ? 1 : 2);
  return std::vector<TensorType>{{x.dtype, Shape(size.begin(), size.end())}};
}

Result inferBroadcastTo(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  const auto& shape = std::get<IntTuple>(*in[1].constant);
  Shape target(shape.begin(), shape.end());
  bool fits = target.size() >= x.shape.size();
  for (size_t i = 0; fits && i < x.shape.size(); ++i) {
    int64_t d = x.shape[x.shape.size() - 1 - i], t = target[target.size() - 1 - i];
    fits = d == t || d == 1;
  }
  for (int64_t d : target) fits = fits && d >= 0;
  if (!fits)
    return fail(fmt::format("x of shape {} does not broadcast to {} (numpy rules: each trailing dim equal or 1)",
                            formatShape(x.shape), formatShape(target)),
                1);
  return std::vector<TensorType>{{x.dtype, target}};
}

Result inferBiasAdd(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  const TensorType& b = *in[1].tensor;
  if (x.shape.size() < 2) return fail(fmt::format("BiasAdd needs x of rank >= 2; got shape {}", formatShape(x.shape)), 0);
  if (b.shape.size() != 1 || b.shape[0] != x.shape[1])
    return fail(fmt::format("BiasAdd's bias must have shape ({}) (dim 1 of x); got {}", x.shape[1], formatShape(b.shape)), 1);
  if (x.dtype != b.dtype)
    return fail(fmt::format("operand dtypes differ: {} and {}", modelName(x.dtype), modelName(b.dtype)), 1);
  return std::vector<TensorType>{x};
}

Result inferReduce(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  IntTuple axes = asTuple(*in[1].constant);
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n) return fail(fmt::format("axis {} is out of range for rank {} (valid: {} .. {})", a, rank, -rank, rank - 1), 1);
    if (reduced[*n]) return fail(fmt::format("axis {} is listed twice", a), 1);
    reduced[*n] = true;
  }
  bool keep = boolAttr(attrs, "keep_dims");
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i]) out.push_back(x.shape[i]);
    else if (keep) out.push_back(1);
  }
  return std::vector<TensorType>{{x.dtype, out}};
}

Result inferReshape(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  IntTuple target = std::get<IntTuple>(*in[1].constant);
  int64_t total = numElements(x.shape), known = 1;
  int inferred = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (inferred >= 0) return fail(fmt::format("shape {} has more than one -1", formatIntTuple(target)), 1);
      inferred = static_cast<int>(i);
    } else if (target[i] <= 0) {
      return fail(fmt::format("shape {} has entry {}; entries must be positive or a single -1", formatIntTuple(target), target[i]), 1);
    } else if (auto k = checkedMul(known, target[i]); k && *k <= kMaxTensorElements) {
      known = *k;
    } else {
      return fail(fmt::format("shape {} has more than {} elements (docs/limits.md)", formatIntTuple(target), kMaxTensorElements), 1);
    }
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return fail(fmt::format("cannot reshape {} ({} elements) to {}: {} is not a multiple of {}", formatShape(x.shape),
                              total, formatIntTuple(target), total, known),
                  1);
    target[inferred] = total / known;
  } else if (known != total) {
    return fail(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", formatShape(x.shape), total,
                            formatIntTuple(target), known),
                1);
  }
  return std::vector<TensorType>{{x.dtype, target}};
}

Result inferTranspose(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  const IntTuple& given = std::get<IntTuple>(*in[1].constant);
  std::optional<IntTuple> perm = normalizePerm(given, x.shape.size());
  if (!perm)
    return fail(fmt::format("perm {} is not a permutation of 0 .. {} (entries in [{}, {}), negative ones counting from the "
                            "end; x has shape {})",
                            formatIntTuple(given), x.shape.size() - 1, -static_cast<int64_t>(x.shape.size()), x.shape.size(),
                            formatShape(x.shape)),
                1);
  Shape out;
  for (int64_t p : *perm) out.push_back(x.shape[p]);
  return std::vector<TensorType>{{x.dtype, out}};
}

Result inferExpandDims(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = std::get<int64_t>(*in[1].constant);
  auto n = normalizeAxis(axis, rank + 1);
  if (!n) return fail(fmt::format("axis {} is out of range for ExpandDims of rank {} (valid: {} .. {})", axis, rank, -rank - 1, rank), 1);
  Shape out = x.shape;
  out.insert(out.begin() + *n, 1);
  return std::vector<TensorType>{{x.dtype, out}};
}

Result inferSqueeze(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  IntTuple axes = asTuple(attrs.at("axis"));
  std::vector<bool> drop(rank, false);
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) drop[i] = x.shape[i] == 1;
  }
  for (int64_t a : axes) {
    auto n = normalizeAxis(a, rank);
    if (!n) return fail(fmt::format("axis {} is out of range for rank {}", a, rank), -1, "axis");
    if (x.shape[*n] != 1)
      return fail(fmt::format("cannot squeeze dim {} of shape {}: its size is {}, not 1", a, formatShape(x.shape), x.shape[*n]), -1, "axis");
    drop[*n] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i]) out.push_back(x.shape[i]);
  return std::vector<TensorType>{{x.dtype, out}};
}

Result inferGather(const std::vector<InferOperand>& in) {
  const TensorType& params = *in[0].tensor;
  const TensorType& indices = *in[1].tensor;
  int64_t rank = static_cast<int64_t>(params.shape.size());
  if (rank < 1) return fail("Gather's params must have rank >= 1; got a scalar", 0);
  if (!isInteger(indices.dtype))
    return fail(fmt::format("Gather's indices must have an integer dtype; got {}", modelName(indices.dtype)), 1);
  int64_t axis = std::get<int64_t>(*in[2].constant);
  auto n = normalizeAxis(axis, rank);
  if (!n) return fail(fmt::format("axis {} is out of range for params of rank {}", axis, rank), 2);
  Shape out(params.shape.begin(), params.shape.begin() + *n);
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), params.shape.begin() + *n + 1, params.shape.end());
  return std::vector<TensorType>{{params.dtype, out}};
}

Result inferConcat(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  if (in.empty()) return fail("Concat needs at least one input");
  const TensorType& first = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(first.shape.size());
  auto axis = normalizeAxis(intAttr(attrs, "axis"), rank);
  if (!axis) return fail(fmt::format("axis {} is out of range for rank {}", intAttr(attrs, "axis"), rank), -1, "axis");
  Shape out = first.shape;
  for (size_t i = 1; i < in.size(); ++i) {
    const TensorType& t = *in[i].tensor;
    if (t.dtype != first.dtype)
      return fail(fmt::format("Concat inputs have different dtypes: {} and {}", modelName(first.dtype), modelName(t.dtype)), static_cast<int>(i));
    bool ok = static_cast<int64_t>(t.shape.size()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d)
      if (d != *axis && t.shape[d] != first.shape[d]) ok = false;
    if (!ok)
      return fail(fmt::format("Concat input {} has shape {}; it must equal {} except on axis {}", i, formatShape(t.shape),
                              formatShape(first.shape), *axis),
                  static_cast<int>(i));
    out[*axis] += t.shape[*axis];
  }
  return std::vector<TensorType>{{first.dtype, out}};
}

Result inferSplit(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  auto axis = normalizeAxis(intAttr(attrs, "axis"), rank);
  if (!axis) return fail(fmt::format("axis {} is out of range for rank {}", intAttr(attrs, "axis"), rank), -1, "axis");
  int64_t n = intAttr(attrs, "output_num");
  if (n < 1 || n > kMaxOpResults)
    return fail(fmt::format("output_num must be in 1 .. {} (docs/limits.md); got {}", kMaxOpResults, n), -1, "output_num");
  if (x.shape[*axis] % n != 0)
    return fail(fmt::format("output_num {} does not divide dim {} of shape {} (size {})", n, *axis, formatShape(x.shape), x.shape[*axis]),
                -1, "output_num");
  Shape part = x.shape;
  part[*axis] /= n;
  return std::vector<TensorType>(n, TensorType{x.dtype, part});
}

Result inferLayerNorm(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  auto bna = normalizeAxis(intAttr(attrs, "begin_norm_axis"), rank);
  if (!bna) return fail(fmt::format("begin_norm_axis {} is out of range for rank {}", intAttr(attrs, "begin_norm_axis"), rank), -1, "begin_norm_axis");
  auto bpa = normalizeAxis(intAttr(attrs, "begin_params_axis"), rank);
  if (!bpa || *bpa != *bna)
    return fail(fmt::format("begin_params_axis {} must equal begin_norm_axis {}", intAttr(attrs, "begin_params_axis"),
                            intAttr(attrs, "begin_norm_axis")),
                -1, "begin_params_axis");
  Shape paramShape(x.shape.begin() + *bna, x.shape.end());
  for (int i = 1; i <= 2; ++i) {
    const TensorType& p = *in[i].tensor;
    if (p.shape != paramShape)
      return fail(fmt::format("LayerNorm's {} must have shape {} (x's dims from begin_norm_axis {}); got {}",
                              i == 1 ? "gamma" : "beta", formatShape(paramShape), *bna, formatShape(p.shape)),
                  i);
    if (p.dtype != x.dtype)
      return fail(fmt::format("operand dtypes differ: {} and {}", modelName(x.dtype), modelName(p.dtype)), i);
  }
  Shape stat(x.shape.begin(), x.shape.begin() + *bna);
  stat.resize(rank, 1);
  return std::vector<TensorType>{x, {x.dtype, stat}, {x.dtype, stat}};
}

Result inferSoftmaxCrossEntropy(const std::vector<InferOperand>& in) {
  const TensorType& logits = *in[0].tensor;
  const TensorType& labels = *in[1].tensor;
  if (logits.shape.size() != 2)
    return fail(fmt::format("logits must be 2-d [n, c]; got shape {}", formatShape(logits.shape)), 0);
  if (labels.shape != logits.shape || labels.dtype != logits.dtype)
    return fail(fmt::format("labels must have the logits' type {}; got {}", typeText(logits), typeText(labels)), 1);
  return std::vector<TensorType>{{logits.dtype, {logits.shape[0]}}, logits};
}

TensorType scalarOperandType(const InferOperand& o) {
  if (o.tensor) return *o.tensor;
  return {std::get<ScalarTensor>(*o.constant).dtype, {}};
}

Result inferOneHot(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& indices = *in[0].tensor;
  if (!isInteger(indices.dtype))
    return fail(fmt::format("OneHot's indices must have an integer dtype; got {}", modelName(indices.dtype)), 0);
  int64_t depth = std::get<int64_t>(*in[1].constant);
  if (depth < 1) return fail(fmt::format("depth must be >= 1; got {}", depth), 1);
  TensorType on = scalarOperandType(in[2]), off = scalarOperandType(in[3]);
  if (!on.shape.empty()) return fail(fmt::format("on_value must be a scalar; got shape {}", formatShape(on.shape)), 2);
  if (!off.shape.empty()) return fail(fmt::format("off_value must be a scalar; got shape {}", formatShape(off.shape)), 3);
  if (on.dtype != off.dtype)
    return fail(fmt::format("on_value and off_value dtypes differ: {} and {}", modelName(on.dtype), modelName(off.dtype)), 3);
  int64_t rank = static_cast<int64_t>(indices.shape.size());
  int64_t axis = intAttr(attrs, "axis");
  if (axis != -1 && (axis < 0 || axis > rank))
    return fail(fmt::format("axis {} is out of range (valid: -1 .. {})", axis, rank), -1, "axis");
  Shape out = indices.shape;
  out.insert(axis == -1 ? out.end() : out.begin() + axis, depth);
  return std::vector<TensorType>{{on.dtype, out}};
}

// Communication ops: group membership is checked by the pass that builds them; here only the
// shape arithmetic.
Result inferCollective(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) {
  TensorType x = *in[0].tensor;
  switch (def.family) {
    case OpFamily::AllGather:
      if (x.shape.empty()) return fail("AllGather needs a tensor of rank >= 1", 0);
      x.shape[0] *= intAttr(attrs, "rank_size");
      break;
    case OpFamily::ReduceScatter: {
      int64_t n = intAttr(attrs, "rank_size");
      if (x.shape.empty() || n < 1 || x.shape[0] % n != 0)
        return fail(fmt::format("ReduceScatter over {} ranks cannot split dim 0 of {}", n, formatShape(x.shape)), 0);
      x.shape[0] /= n;
      break;
    }
    case OpFamily::AlltoAll: {
      int64_t n = intAttr(attrs, "split_count");
      auto sd = normalizeAxis(intAttr(attrs, "split_dim"), x.shape.size());
      auto cd = normalizeAxis(intAttr(attrs, "concat_dim"), x.shape.size());
      if (!sd || !cd || n < 1 || x.shape[*sd] % n != 0)
        return fail(fmt::format("AlltoAll split_count {} does not fit shape {}", n, formatShape(x.shape)), 0);
      x.shape[*sd] /= n;
      x.shape[*cd] *= n;
      break;
    }
    default:
      break;
  }
  return std::vector<TensorType>{x};
}

Result inferStridedSlice(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  const auto& begin = std::get<IntTuple>(*in[1].constant);
  const auto& end = std::get<IntTuple>(*in[2].constant);
  const auto& strides = std::get<IntTuple>(*in[3].constant);
  size_t rank = x.shape.size();
  if (begin.size() != rank || end.size() != rank || strides.size() != rank)
    return fail(fmt::format("StridedSlice bounds must have {} entries", rank), 1);
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (strides[i] != 1 || begin[i] < 0 || end[i] > x.shape[i] || begin[i] > end[i])
      return fail(fmt::format("StridedSlice bounds {}..{} do not fit shape {}", formatIntTuple(begin), formatIntTuple(end),
                              formatShape(x.shape)),
                  1);
    out[i] = end[i] - begin[i];
  }
  return std::vector<TensorType>{{x.dtype, out}};
}

}  // namespace

std::optional<IntTuple> normalizePerm(const IntTuple& perm, size_t rank) {
  if (perm.size() != rank) return std::nullopt;
  IntTuple out;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    auto axis = normalizeAxis(p, static_cast<int64_t>(rank));
    if (!axis || seen[*axis]) return std::nullopt;
    seen[*axis] = true;
    out.push_back(*axis);
  }
  return out;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

namespace {

InferResult inferByFamily(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) {
  switch (def.family) {
    case OpFamily::MatMul: return inferMatMul(in, attrs);
    case OpFamily::BatchMatMul: return inferBatchMatMul(in, attrs);
    case OpFamily::Broadcast: return inferBroadcast(def, in);
    case OpFamily::Select: return inferSelect(in);
    case OpFamily::BiasAdd: return inferBiasAdd(in);
    case OpFamily::Unary: return std::vector<TensorType>{*in[0].tensor};
    case OpFamily::Cast: return std::vector<TensorType>{{std::get<DType>(*in[1].constant), in[0].tensor->shape}};
    case OpFamily::Softmax: {
      const TensorType& x = *in[0].tensor;
      int64_t axis = intAttr(attrs, "axis");
      if (!normalizeAxis(axis, x.shape.size()))
        return fail(fmt::format("axis {} is out of range for rank {}", axis, x.shape.size()), -1, "axis");
      return std::vector<TensorType>{x};
    }
    case OpFamily::Reduce: return inferReduce(in, attrs);
    case OpFamily::Reshape: return inferReshape(in);
    case OpFamily::Transpose: return inferTranspose(in);
    case OpFamily::ExpandDims: return inferExpandDims(in);
    case OpFamily::Squeeze: return inferSqueeze(in, attrs);
    case OpFamily::Gather: return inferGather(in);
    case OpFamily::Concat: return inferConcat(in, attrs);
    case OpFamily::Split: return inferSplit(in, attrs);
    case OpFamily::LayerNorm: return inferLayerNorm(in, attrs);
    case OpFamily::SoftmaxCrossEntropy: return inferSoftmaxCrossEntropy(in);
    case OpFamily::OneHot: return inferOneHot(in, attrs);
    case OpFamily::Opaque: return inferOpaque(attrs);
    case OpFamily::Triangle:
      if (in[0].tensor->shape.size() < 2)
        return fail(fmt::format("x has rank {}; {} takes a tensor of rank >= 2", in[0].tensor->shape.size(), def.type), 0);
      return std::vector<TensorType>{*in[0].tensor};
    case OpFamily::Slice: return inferSlice(in);
    case OpFamily::BroadcastTo: return inferBroadcastTo(in);
    case OpFamily::AllReduce:
    case OpFamily::AllGather:
    case OpFamily::ReduceScatter:
    case OpFamily::AlltoAll: return inferCollective(def, in, attrs);
    case OpFamily::Mirror: return std::vector<TensorType>{*in[0].tensor};
    case OpFamily::StridedSlice: return inferStridedSlice(in);
  }
  return fail("unknown op family");
}

}  // namespace

InferResult inferResultTypes(const OpDef& def, const std::vector<InferOperand>& in, const AttrMap& attrs) {
  InferResult result = inferByFamily(def, in, attrs);
  // Every result stays within the documented element bound (docs/limits.md): a OneHot depth or
  // a Reshape target can otherwise ask for sizes whose byte counts wrap around int64.
  if (auto* types = std::get_if<std::vector<TensorType>>(&result))
    for (const TensorType& t : *types)
      if (!withinElementLimit(t.shape))
        return fail(fmt::format("the result {} would have more than {} elements (docs/limits.md)", formatShape(t.shape),
                                kMaxTensorElements));
  return result;
}

}  // namespace irc
