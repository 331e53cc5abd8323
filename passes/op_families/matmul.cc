// MatMul and BatchMatMul: batch factors (broadcasting), m and n pass through, k is contracted
// (a reduction: splitting it leaves the output partial). MindSpore's device matrix is
// [batch..., m, k, n]. MatMul alone takes an out_strategy, to reduce-scatter its output.
#include <fmt/format.h>

#include "ir/layout_notation.h"
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"

namespace irc::families {
namespace {

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
  return b.done(order);
}

class BatchMatMul : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    return matmulRule(in.operands[0], in.operands[1], in.results[0], in.attrs);
  }
};

class MatMul : public BatchMatMul {
 public:
  // MindSpore's out_strategy ((m*k, n)): the partial output reduce-scattered on dim 0.
  std::variant<TensorLayout, StrategyError> outputFromOutStrategy(const OpRule& rule, const OpView& op,
                                                                 const std::vector<int64_t>& splits, const OpSharding& s,
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
    TensorLayout layout = resultLayout(rule, s, 0, op.resultShapes[0]);
    layout.dims[0].insert(layout.dims[0].end(), s.factorAxes[k].begin(), s.factorAxes[k].end());
    layout.partialAxes.clear();
    return layout;
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
