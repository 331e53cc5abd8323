// MatMul and BatchMatMul: batch factors (broadcasting), m and n pass through, k is contracted
// (a reduction: splitting it leaves the output partial). MindSpore's device matrix is
// [batch..., m, k, n]. MatMul alone takes an out_strategy, to reduce-scatter its output.
#include <Eigen/Dense>
#include <algorithm>

#include <fmt/format.h>

#include "ir/layout_notation.h"
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferMatMul(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  const TensorType& w = *in[1].tensor;
  if (x.shape.size() != 2) return fail(fmt::format("MatMul takes 2-d operands; x has shape {}", formatShape(x.shape)), 0);
  if (w.shape.size() != 2) return fail(fmt::format("MatMul takes 2-d operands; w has shape {}", formatShape(w.shape)), 1);
  if (x.dtype != w.dtype) return fail(fmt::format("operand dtypes differ: {} and {}", modelName(x.dtype), modelName(w.dtype)), 1);
  bool ta = boolAttr(attrs, "transpose_a"), tb = boolAttr(attrs, "transpose_b");
  int64_t m = ta ? x.shape[1] : x.shape[0], kx = ta ? x.shape[0] : x.shape[1];
  int64_t kw = tb ? w.shape[1] : w.shape[0], n = tb ? w.shape[0] : w.shape[1];
  if (kx != kw)
    return fail(fmt::format("contracted dims differ: x {}{} contracts {}, w {}{} contracts {}", formatShape(x.shape),
                            ta ? " (transposed)" : "", kx, formatShape(w.shape), tb ? " (transposed)" : "", kw),
                1);
  return std::vector<TensorType>{{x.dtype, {m, n}}};
}

InferResult inferBatchMatMul(const std::vector<InferOperand>& in, const AttrMap& attrs) {
  const TensorType& x = *in[0].tensor;
  const TensorType& w = *in[1].tensor;
  if (x.shape.size() < 2)
    return fail(fmt::format("BatchMatMul needs operands of rank >= 2; x has shape {}", formatShape(x.shape)), 0);
  if (w.shape.size() < 2)
    return fail(fmt::format("BatchMatMul needs operands of rank >= 2; w has shape {}", formatShape(w.shape)), 1);
  if (x.dtype != w.dtype) return fail(fmt::format("operand dtypes differ: {} and {}", modelName(x.dtype), modelName(w.dtype)), 1);
  bool ta = boolAttr(attrs, "transpose_a"), tb = boolAttr(attrs, "transpose_b");
  if (auto window = attrs.find("window"); window != attrs.end() && std::get<int64_t>(window->second) < 0)
    return fail(fmt::format("window is {}; valid: 0 (every key) or the keys each query attends to (> 0)",
                            std::get<int64_t>(window->second)),
                0);
  if (auto chunk = attrs.find("chunk"); chunk != attrs.end() && std::get<int64_t>(chunk->second) != 0) {
    const int64_t c = std::get<int64_t>(chunk->second);
    if (c < 0) return fail(fmt::format("chunk is {}; valid: 0 (no chunks) or the chunk's tokens (> 0)", c), 0);
    if (!boolAttr(attrs, "causal"))
      return fail(fmt::format("chunk {} reads a query's chunk up to its position: it needs causal: true", c), 0);
    if (auto window = attrs.find("window"); window != attrs.end() && std::get<int64_t>(window->second) > 0)
      return fail("chunk and window are two kinds of local attention: give one", 0);
  }
  size_t rx = x.shape.size(), rw = w.shape.size();
  int64_t m = ta ? x.shape[rx - 1] : x.shape[rx - 2], kx = ta ? x.shape[rx - 2] : x.shape[rx - 1];
  int64_t kw = tb ? w.shape[rw - 1] : w.shape[rw - 2], n = tb ? w.shape[rw - 2] : w.shape[rw - 1];
  if (kx != kw)
    return fail(fmt::format("contracted dims differ: x {} contracts {}, w {} contracts {}", formatShape(x.shape), kx,
                            formatShape(w.shape), kw),
                1);
  Shape bx(x.shape.begin(), x.shape.end() - 2), bw(w.shape.begin(), w.shape.end() - 2);
  auto batch = broadcastShapes(bx, bw);
  if (!batch) return fail(fmt::format("batch dims {} and {} do not broadcast", formatShape(bx), formatShape(bw)), 1);
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  return std::vector<TensorType>{{x.dtype, out}};
}

TensorValue matmul(const TensorValue& x, const TensorValue& w, bool ta, bool tb, const Shape& outShape) {
  TensorValue out = TensorValue::zeros(outShape);
  size_t rank = outShape.size();
  int64_t m = outShape[rank - 2], n = outShape[rank - 1];
  size_t rx = x.shape.size(), rw = w.shape.size();
  auto sx = stridesOf(x.shape), sw = stridesOf(w.shape), so = stridesOf(outShape);
  Shape batch(outShape.begin(), outShape.end() - 2);
  forEach(batch, [&](const Index& b) {
    // Batch offsets with broadcasting of each operand's batch dims.
    auto batchOffset = [&](const TensorValue& t, const std::vector<int64_t>& st) {
      size_t tb2 = t.shape.size() - 2, off = batch.size() - tb2;
      int64_t o = 0;
      for (size_t d = 0; d < tb2; ++d) o += (t.shape[d] == 1 ? 0 : b[off + d]) * st[d];
      return o;
    };
    int64_t ox = batchOffset(x, sx), ow = batchOffset(w, sw);
    int64_t oo = 0;
    for (size_t d = 0; d < batch.size(); ++d) oo += b[d] * so[d];
    // Each batch's matrices are contiguous and row-major: Eigen multiplies them in place.
    using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Eigen::Map<const Matrix> a(x.data.data() + ox, x.shape[rx - 2], x.shape[rx - 1]);
    Eigen::Map<const Matrix> c(w.data.data() + ow, w.shape[rw - 2], w.shape[rw - 1]);
    Eigen::Map<Matrix> result(out.data.data() + oo, m, n);
    if (ta && tb) result.noalias() = a.transpose() * c.transpose();
    else if (ta) result.noalias() = a.transpose() * c;
    else if (tb) result.noalias() = a * c.transpose();
    else result.noalias() = a * c;
  });
  return out;
}

// Of a queries × keys attention, the points a kernel visits. `window` > 0: each query reads
// `window` keys (a sliding window). Causal: query i (counted from 1) reads the keys up to its own
// position, the queries being the sequence's last (keys - queries before them: a chunk of
// queries after a cache); within a window, the last `window` of those. The sum over the queries
// of min(window, keys before and at i), over queries × keys.
double attentionPointsVisited(int64_t queries, int64_t keys, int64_t window, bool causal, int64_t chunk) {
  if (queries <= 0 || keys <= 0) return 1;
  if (chunk > 0 && causal) {
    // Chunked (Llama 4's local layers): the key at position p is read by the queries of its chunk
    // at or after it; query p reads (p mod chunk) + 1 keys. Over positions 0 .. n - 1 that is
    // whole chunks' chunk (chunk + 1) / 2 and the last part's r (r + 1) / 2.
    const double c = static_cast<double>(chunk);
    auto readUpTo = [&](int64_t n) {
      const double whole = static_cast<double>(n / chunk), r = static_cast<double>(n % chunk);
      return whole * c * (c + 1) / 2 + r * (r + 1) / 2;
    };
    const int64_t offset = std::max<int64_t>(0, keys - queries), last = offset + std::min(queries, keys);
    return (readUpTo(last) - readUpTo(offset)) / (static_cast<double>(queries) * static_cast<double>(keys));
  }
  const double w = window > 0 ? static_cast<double>(std::min(window, keys)) : static_cast<double>(keys);
  if (!causal) return w / static_cast<double>(keys);
  // Query i reads min(w, offset + i) keys, offset = keys - queries (>= 0; a longer query side
  // reads from the first key on).
  const double offset = static_cast<double>(std::max<int64_t>(0, keys - queries)), q = static_cast<double>(queries);
  // The queries whose reach offset + i stays under w: i <= w - offset.
  const double ramp = std::clamp(w - offset, 0.0, q);
  const double visited = ramp * offset + ramp * (ramp + 1) / 2 + (q - ramp) * w;
  return visited / (q * static_cast<double>(keys));
}

const std::vector<AttrSpec> kTransposes = {attr("transpose_a", AttrKind::Bool, false),
                                           attr("transpose_b", AttrKind::Bool, false)};

OpRule matmulRule(const TensorType& x, const TensorType& w, const TensorType& out, const AttrMap& attrs) {
  RuleBuilder b;
  bool ta = std::get<bool>(attrs.at("transpose_a")), tb = std::get<bool>(attrs.at("transpose_b"));
  size_t batch = out.shape.size() - 2;
  std::vector<int> batchFactors;
  for (size_t i = 0; i < batch; ++i) batchFactors.push_back(b.factor(out.shape[i]));
  int m = b.factor(out.shape[batch]);
  int n = b.factor(out.shape[batch + 1]);
  int64_t kSize = ta ? x.shape[x.shape.size() - 2] : x.shape.back();
  int k = b.factor(kSize, FactorKind::Reduction);
  auto operandDims = [&](const TensorType& t, int rowF, int colF, bool transposed) {
    DimFactors dims;
    size_t tb2 = t.shape.size() - 2, offset = batch - tb2;
    for (size_t d = 0; d < tb2; ++d) {
      bool broadcasts = t.shape[d] == 1 && out.shape[offset + d] != 1;
      dims.push_back(broadcasts ? std::vector<int>{} : std::vector<int>{batchFactors[offset + d]});
    }
    dims.push_back({transposed ? colF : rowF});
    dims.push_back({transposed ? rowF : colF});
    return dims;
  };
  b.rule.operands.push_back(operandDims(x, m, k, ta));
  b.rule.operands.push_back(operandDims(w, k, n, tb));
  DimFactors outDims = single(batchFactors);
  outDims.push_back({m});
  outDims.push_back({n});
  b.rule.results.push_back(outDims);
  std::vector<int> order = batchFactors;
  order.insert(order.end(), {m, k, n});
  OpRule rule = b.done(order);
  // Attention's products (BatchMatMul's `window`, `chunk` and `causal`): the kernel visits only
  // the points a query reads, and skips the blocks outside them.
  const auto windowAttr = attrs.find("window"), causalAttr = attrs.find("causal"), chunkAttr = attrs.find("chunk");
  const int64_t window = windowAttr != attrs.end() ? std::get<int64_t>(windowAttr->second) : 0;
  const int64_t chunk = chunkAttr != attrs.end() ? std::get<int64_t>(chunkAttr->second) : 0;
  const bool causal = causalAttr != attrs.end() && std::get<bool>(causalAttr->second);
  if (window > 0 || causal) {
    const int64_t keys = tb ? out.shape[batch + 1] : kSize;
    rule.pointsVisited = attentionPointsVisited(out.shape[batch], keys, window, causal, chunk);
  }
  return rule;
}

class BatchMatMul : public OpFamilyRules {
 public:
  bool operandIsWeight(const Graph&, const Op&, size_t operand) const override { return operand < 2; }
  // x @ w, w as torch's Linear holds it where transpose_b ([out, in]); a transposed activation
  // is no Linear's.
  ModulePart modulePart(const Op& op) const override {
    if (std::get<bool>(op.attrs.at("transpose_a"))) return {};
    return {ModulePart::Kind::Product, 0, 1, std::get<bool>(op.attrs.at("transpose_b"))};
  }
  SavedForBackward savedForBackward(const Op& op) const override { return factorsSaved(op); }
  void define(std::vector<OpDef>& defs) const override {
    // (irc) `window`: the keys each query row attends to, 0 for all (a sliding window's attention).
    std::vector<AttrSpec> attrs = kTransposes;
    attrs.push_back({"window", AttrKind::Int, Attribute(int64_t{0}), /*ircOnly=*/true});
    // (irc) `causal`: each query attends to the keys at or before its position.
    attrs.push_back({"causal", AttrKind::Bool, Attribute(false), /*ircOnly=*/true});
    // (irc) `chunk`: with causal, each query attends to the keys of its own chunk of `chunk`
    // tokens up to its position (Llama 4's chunked attention), 0 for none.
    attrs.push_back({"chunk", AttrKind::Int, Attribute(int64_t{0}), /*ircOnly=*/true});
    defs.push_back({"BatchMatMul", OpFamily::BatchMatMul, {tensor("x"), tensor("w")}, attrs});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferBatchMatMul(in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {matmul(*in[0], *in[1], std::get<bool>(op.attrs.at("transpose_a")), std::get<bool>(op.attrs.at("transpose_b")),
                   results[0].shape)};
  }
  // Dim 0 is a batch dim when the result has one and neither side is a vector.
  bool passesBatchDim0(const Graph& g, const Op& op) const override {
    if (g.value(op.results[0]).type.shape.size() < 3) return false;
    for (const Operand& operand : op.operands)
      if (operand.isValue() && g.value(operand.value).type.shape.size() < 2) return false;
    return true;
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Float32, {2, 8, 8}}, {DType::Float32, {2, 8, 8}}};
    s.note = "(2, 8, 8) x (2, 8, 8)";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    return matmulRule(in.operands[0], in.operands[1], in.results[0], in.attrs);
  }
};

class MatMul : public BatchMatMul {
 public:
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"MatMul", OpFamily::MatMul, {tensor("x"), tensor("w")}, kTransposes});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferMatMul(in, attrs);
  }
  void sample(const OpDef&, OpSample& s) const override { s.operands.push_back(s.operands[0]); }
  // MindSpore's out_strategy ((m*k, n)): the partial output reduce-scattered on dim 0.
  std::optional<StrategyError> checkOutStrategy(const OpRule& rule, const OpView& op, const std::vector<int64_t>& splits,
                                                const ShardStrategy& out) const override {
    int m = rule.results[0][0][0], n = rule.results[0][1][0];
    int k = -1;
    for (int f = 0; f < rule.factorCount(); ++f)
      if (rule.isReduction(f)) k = f;
    ShardStrategy expected = {{splits[m] * splits[k], splits[n]}};
    if (out != expected)
      return StrategyError{fmt::format("MatMul '{}': out_strategy must be {} (dim 0 split by m*k to reduce-scatter the partial "
                                       "sum); got {}",
                                       op.name, formatIntTuple(expected[0]), formatIntTuple(out.at(0))),
                           -1};
    return std::nullopt;
  }
};

}  // namespace

const OpFamilyRules& matMul() {
  static const MatMul rules;
  return rules;
}

const OpFamilyRules& batchMatMul() {
  static const BatchMatMul rules;
  return rules;
}

}  // namespace irc::families
