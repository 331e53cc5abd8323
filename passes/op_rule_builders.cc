// The factor rule of every op family (spec/ops.md "rule" column).
#include <algorithm>
#include <numeric>

#include "ir/shape_inference.h"
#include "passes/op_rule.h"

namespace irc {
namespace {

class RuleBuilder {
 public:
  int factor(int64_t size, FactorKind kind = FactorKind::PassThrough) {
    rule.factorSizes.push_back(size);
    rule.factorKinds.push_back(kind);
    return rule.factorCount() - 1;
  }
  // One new factor per dim of `shape`; returns their indices.
  std::vector<int> factorsFor(const Shape& shape) {
    std::vector<int> f;
    for (int64_t d : shape) f.push_back(factor(d));
    return f;
  }
  OpRule done(std::vector<int> mindsporeOrder = {}) {
    if (mindsporeOrder.empty()) {
      mindsporeOrder.resize(rule.factorCount());
      std::iota(mindsporeOrder.begin(), mindsporeOrder.end(), 0);
    }
    rule.mindsporeOrder = std::move(mindsporeOrder);
    return std::move(rule);
  }
  OpRule rule;
};

DimFactors single(const std::vector<int>& factors) {
  DimFactors dims;
  for (int f : factors) dims.push_back({f});
  return dims;
}

// Elementwise with numpy broadcasting: one factor per output dim; an operand dim of size 1 under
// a larger output dim has none (it must not be split).
OpRule broadcastRule(const std::vector<TensorType>& operands, const TensorType& result) {
  RuleBuilder b;
  std::vector<int> f = b.factorsFor(result.shape);
  for (const TensorType& t : operands) {
    DimFactors dims;
    size_t offset = result.shape.size() - t.shape.size();
    for (size_t d = 0; d < t.shape.size(); ++d) {
      bool broadcast = t.shape[d] == 1 && result.shape[offset + d] != 1;
      dims.push_back(broadcast ? std::vector<int>{} : std::vector<int>{f[offset + d]});
    }
    b.rule.operands.push_back(dims);
  }
  b.rule.results.push_back(single(f));
  return b.done();
}

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
      bool broadcast = t.shape[d] == 1 && out.shape[offset + d] != 1;
      dims.push_back(broadcast ? std::vector<int>{} : std::vector<int>{batchFactors[offset + d]});
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
  // MindSpore's device matrix: [batch..., m, k, n].
  std::vector<int> order = batchFactors;
  order.insert(order.end(), {m, k, n});
  return b.done(order);
}

// Reshape: the common refinement of both shapes' prefix products gives the factors; a dim
// spans a run of them. Where the refinement does not divide evenly (e.g. (6, 4) -> (4, 6)),
// the dims of that stretch get their own replicated factors: they cannot be split across it.
OpRule reshapeRule(const Shape& in, const Shape& out) {
  RuleBuilder b;
  DimFactors inDims(in.size()), outDims(out.size());
  size_t i = 0, o = 0;
  while (i < in.size() || o < out.size()) {
    // Size-1 dims have no factor.
    if (i < in.size() && in[i] == 1) { ++i; continue; }
    if (o < out.size() && out[o] == 1) { ++o; continue; }
    // Find the shortest stretch [i, i2) x [o, o2) whose products agree.
    size_t i2 = i, o2 = o;
    int64_t pi = 1, po = 1;
    do {
      if (pi <= po && i2 < in.size()) pi *= in[i2++];
      else if (o2 < out.size()) po *= out[o2++];
      else break;
    } while (pi != po);
    // Try to refine the stretch into factors shared by both sides.
    std::vector<int64_t> cutsIn, cutsOut;
    int64_t acc = 1;
    for (size_t d = i; d < i2; ++d) cutsIn.push_back(acc *= in[d]);
    acc = 1;
    for (size_t d = o; d < o2; ++d) cutsOut.push_back(acc *= out[d]);
    std::vector<int64_t> cuts(cutsIn);
    cuts.insert(cuts.end(), cutsOut.begin(), cutsOut.end());
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    bool refines = true;
    for (size_t c = 1; c < cuts.size(); ++c) refines = refines && cuts[c] % cuts[c - 1] == 0;
    if (refines) {
      std::vector<int> factors;
      int64_t prev = 1;
      for (int64_t c : cuts) {
        factors.push_back(b.factor(c / prev));
        prev = c;
      }
      auto assign = [&](const Shape& shape, size_t from, size_t to, DimFactors& dims) {
        size_t f = 0;
        int64_t reached = 1;
        for (size_t d = from; d < to; ++d) {
          int64_t target = reached * shape[d];
          while (reached < target) {
            dims[d].push_back(factors[f]);
            reached *= b.rule.factorSizes[factors[f]];
            ++f;
          }
        }
      };
      assign(in, i, i2, inDims);
      assign(out, o, o2, outDims);
    } else {
      for (size_t d = i; d < i2; ++d) inDims[d].push_back(b.factor(in[d], FactorKind::Replicated));
      for (size_t d = o; d < o2; ++d) outDims[d].push_back(b.factor(out[d], FactorKind::Replicated));
    }
    i = i2;
    o = o2;
  }
  b.rule.operands.push_back(inDims);
  b.rule.results.push_back(outDims);
  return b.done();
}

OpRule layerNormRule(const TensorType& x, const AttrMap& attrs) {
  RuleBuilder b;
  int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = *normalizeAxis(std::get<int64_t>(attrs.at("begin_norm_axis")), rank);
  std::vector<int> f;
  for (int64_t d = 0; d < rank; ++d) f.push_back(b.factor(x.shape[d], d >= axis ? FactorKind::Replicated : FactorKind::PassThrough));
  std::vector<int> trailing(f.begin() + axis, f.end()), leading(f.begin(), f.begin() + axis);
  b.rule.operands = {single(f), single(trailing), single(trailing)};
  DimFactors stat = single(leading);
  stat.resize(rank);
  b.rule.results = {single(f), stat, stat};
  return b.done();
}

std::vector<bool> reducedDims(const Attribute& axisAttr, int64_t rank) {
  IntTuple axes;
  if (auto* i = std::get_if<int64_t>(&axisAttr)) axes = {*i};
  else axes = std::get<IntTuple>(axisAttr);
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) reduced[*normalizeAxis(a, rank)] = true;
  return reduced;
}

}  // namespace

std::optional<OpRule> buildRule(const OpDef& def, const std::vector<TensorType>& in, const std::vector<Attribute>& constants,
                                const AttrMap& attrs, const std::vector<TensorType>& out) {
  switch (def.family) {
    case OpFamily::Unary:
    case OpFamily::Cast: {
      RuleBuilder b;
      std::vector<int> f = b.factorsFor(in[0].shape);
      b.rule.operands = {single(f)};
      b.rule.results = {single(f)};
      return b.done();
    }
    case OpFamily::Broadcast: return broadcastRule(in, out[0]);
    case OpFamily::BiasAdd: {
      RuleBuilder b;
      std::vector<int> f = b.factorsFor(in[0].shape);
      b.rule.operands = {single(f), DimFactors{{f[1]}}};
      b.rule.results = {single(f)};
      return b.done();
    }
    case OpFamily::MatMul:
    case OpFamily::BatchMatMul: return matmulRule(in[0], in[1], out[0], attrs);
    case OpFamily::Softmax: {
      RuleBuilder b;
      int64_t rank = static_cast<int64_t>(in[0].shape.size());
      int64_t axis = *normalizeAxis(std::get<int64_t>(attrs.at("axis")), rank);
      std::vector<int> f;
      for (int64_t d = 0; d < rank; ++d)
        f.push_back(b.factor(in[0].shape[d], d == axis ? FactorKind::Replicated : FactorKind::PassThrough));
      b.rule.operands = {single(f)};
      b.rule.results = {single(f)};
      return b.done();
    }
    case OpFamily::Reduce: {
      RuleBuilder b;
      int64_t rank = static_cast<int64_t>(in[0].shape.size());
      std::vector<bool> reduced = reducedDims(constants.at(0), rank);
      bool keep = std::get<bool>(attrs.at("keep_dims"));
      std::vector<int> f;
      DimFactors outDims;
      for (int64_t d = 0; d < rank; ++d) {
        f.push_back(b.factor(in[0].shape[d], reduced[d] ? FactorKind::Reduction : FactorKind::PassThrough));
        if (!reduced[d]) outDims.push_back({f.back()});
        else if (keep) outDims.push_back({});
      }
      if (def.type == "ReduceMax") b.rule.reduceOp = ReduceOp::Max;
      if (def.type == "ReduceMin") b.rule.reduceOp = ReduceOp::Min;
      b.rule.operands = {single(f)};
      b.rule.results = {outDims};
      return b.done();
    }
    case OpFamily::Reshape: return reshapeRule(in[0].shape, out[0].shape);
    case OpFamily::Transpose: {
      RuleBuilder b;
      std::vector<int> f = b.factorsFor(in[0].shape);
      IntTuple perm = *normalizePerm(std::get<IntTuple>(constants.at(0)), in[0].shape.size());
      DimFactors outDims;
      for (int64_t p : perm) outDims.push_back({f[p]});
      b.rule.operands = {single(f)};
      b.rule.results = {outDims};
      return b.done();
    }
    case OpFamily::ExpandDims: {
      RuleBuilder b;
      std::vector<int> f = b.factorsFor(in[0].shape);
      int64_t axis = *normalizeAxis(std::get<int64_t>(constants.at(0)), in[0].shape.size() + 1);
      DimFactors outDims = single(f);
      outDims.insert(outDims.begin() + axis, std::vector<int>{});
      b.rule.operands = {single(f)};
      b.rule.results = {outDims};
      return b.done();
    }
    case OpFamily::Squeeze: {
      RuleBuilder b;
      int64_t rank = static_cast<int64_t>(in[0].shape.size());
      Attribute axisAttr = attrs.at("axis");
      bool all = std::holds_alternative<IntTuple>(axisAttr) && std::get<IntTuple>(axisAttr).empty();
      std::vector<bool> dropped = all ? std::vector<bool>(rank, false) : reducedDims(axisAttr, rank);
      DimFactors inDims, outDims;
      for (int64_t d = 0; d < rank; ++d) {
        if (all) dropped[d] = in[0].shape[d] == 1;
        std::vector<int> f = in[0].shape[d] == 1 ? std::vector<int>{} : std::vector<int>{b.factor(in[0].shape[d])};
        inDims.push_back(f);
        if (!dropped[d]) outDims.push_back(f);
      }
      b.rule.operands = {inDims};
      b.rule.results = {outDims};
      return b.done();
    }
    case OpFamily::Gather: {
      RuleBuilder b;
      int64_t rank = static_cast<int64_t>(in[0].shape.size());
      int64_t axis = *normalizeAxis(std::get<int64_t>(constants.at(0)), rank);
      // A split vocabulary (axis 0) becomes ops.md's masked lookup, whose mask broadcasts over
      // the trailing embedding dim. A gathered dim at another axis has no such lowering here, so
      // it is never split: a strategy that splits it is rejected, propagation does not pick one.
      FactorKind gathered = axis == 0 ? FactorKind::Reduction : FactorKind::Replicated;
      std::vector<int> p;
      for (int64_t d = 0; d < rank; ++d) p.push_back(b.factor(in[0].shape[d], d == axis ? gathered : FactorKind::PassThrough));
      std::vector<int> idx = b.factorsFor(in[1].shape);
      DimFactors outDims;
      for (int64_t d = 0; d < axis; ++d) outDims.push_back({p[d]});
      for (int f : idx) outDims.push_back({f});
      for (int64_t d = axis + 1; d < rank; ++d) outDims.push_back({p[d]});
      b.rule.operands = {single(p), single(idx)};
      b.rule.results = {outDims};
      return b.done();
    }
    case OpFamily::Concat:
    case OpFamily::Split: {
      RuleBuilder b;
      const TensorType& ref = def.family == OpFamily::Concat ? out[0] : in[0];
      int64_t rank = static_cast<int64_t>(ref.shape.size());
      int64_t axis = *normalizeAxis(std::get<int64_t>(attrs.at("axis")), rank);
      std::vector<int> f = b.factorsFor(ref.shape);
      b.rule.factorKinds[f[axis]] = FactorKind::Replicated;
      // Every operand and result has the same factors; the split/concat axis is one replicated
      // factor for all of them (its size differs per tensor, but it is never split), so the
      // tensor maps are MindSpore's identity maps.
      for (size_t i = 0; i < in.size(); ++i) b.rule.operands.push_back(single(f));
      for (size_t i = 0; i < out.size(); ++i) b.rule.results.push_back(single(f));
      return b.done();
    }
    case OpFamily::LayerNorm: return layerNormRule(in[0], attrs);
    case OpFamily::SoftmaxCrossEntropy: {
      RuleBuilder b;
      int n = b.factor(in[0].shape[0]);
      int c = b.factor(in[0].shape[1], FactorKind::Replicated);
      b.rule.operands = {DimFactors{{n}, {c}}, DimFactors{{n}, {c}}};
      b.rule.results = {DimFactors{{n}}, DimFactors{{n}, {c}}};
      return b.done();
    }
    case OpFamily::OneHot: {
      RuleBuilder b;
      std::vector<int> idx = b.factorsFor(in[0].shape);
      int depth = b.factor(std::get<int64_t>(constants.at(0)));
      int64_t axis = std::get<int64_t>(attrs.at("axis"));
      DimFactors outDims = single(idx);
      outDims.insert(axis == -1 ? outDims.end() : outDims.begin() + axis, std::vector<int>{depth});
      b.rule.operands.push_back(single(idx));
      for (size_t i = 1; i < in.size(); ++i) b.rule.operands.push_back({});  // scalar on/off values
      b.rule.results = {outDims};
      return b.done();
    }
    default: return std::nullopt;
  }
}

}  // namespace irc
