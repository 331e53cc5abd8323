// Reshape: takes no strategy (its layouts come from its producer and consumer, ir/op_defs.cc's
// StrategyForm::FromNeighbours); its rule relates the two shapes' dims, and each rank reshapes
// to its local shape.
#include <algorithm>

#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferReshape(const std::vector<InferOperand>& in) {
  const TensorType& x = *in[0].tensor;
  IntTuple target = std::get<IntTuple>(*in[1].constant);
  int64_t total = numElements(x.shape), known = 1;
  int inferred = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (inferred >= 0) return fail(fmt::format("shape {} has more than one -1", formatIntTuple(target)), 1);
      inferred = static_cast<int>(i);
    } else if (target[i] <= 0) {
      return fail(
          fmt::format("shape {} has entry {}; entries must be positive or a single -1", formatIntTuple(target), target[i]), 1);
    } else if (auto k = checkedMul(known, target[i]); k && *k <= kMaxTensorElements) {
      known = *k;
    } else {
      return fail(fmt::format("shape {} has more than {} elements (docs/limits.md)", formatIntTuple(target), kMaxTensorElements),
                  1);
    }
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return fail(fmt::format("cannot reshape {} ({} elements) to {}: {} is not a multiple of {}", formatShape(x.shape), total,
                              formatIntTuple(target), total, known),
                  1);
    target[inferred] = total / known;
  } else if (known != total) {
    return fail(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", formatShape(x.shape), total,
                            formatIntTuple(target), known),
                1);
  }
  return std::vector<TensorType>{{x.dtype, target}};
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
    if (i < in.size() && in[i] == 1) {
      ++i;
      continue;
    }
    if (o < out.size() && out[o] == 1) {
      ++o;
      continue;
    }
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

class Reshape : public OpFamilyRules {
 public:
  bool resultIsView(const Graph&, const Op&) const override { return true; }
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  bool elementwiseForPropagation() const override { return true; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Reshape", OpFamily::Reshape, {tensor("x"), constant("shape", OperandKind::Tuple)}, {}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferReshape(in);
  }
  std::vector<TensorValue> evaluate(const Op&, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {reshaped(*in[0], results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Float32, {2, 4, 8}}};
    s.constants = {Attribute(IntTuple{8, 8})};
    s.note = "(2, 4, 8) -> (8, 8)";
  }
  StrategyForm strategyForm() const override { return StrategyForm::FromNeighbours; }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    return reshapeRule(in.operands[0].shape, in.results[0].shape);
  }
  void localize(Op& op) const override {
    op.operands[1].constant = Attribute(IntTuple(op.parallel->outputLayouts[0].sliceShape()));
  }
};

}  // namespace

const OpFamilyRules& reshape() {
  static const Reshape rules;
  return rules;
}

}  // namespace irc::families
