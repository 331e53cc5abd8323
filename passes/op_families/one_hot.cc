// OneHot: the indices' dims pass through and the class dim (depth) is a new factor. MindSpore
// writes its strategy on the output, then () for on_value and off_value. A split class dim
// one-hots each rank's class range [offset, offset + depth/n): the indices are shifted first,
// and out-of-range indices give off_value as they must.
#include <fmt/format.h>

#include "ir/layout_notation.h"
#include "passes/op_families/families.h"
#include "passes/op_families/rule_builder.h"
#include "passes/op_inserter.h"

namespace irc::families {
namespace {

size_t classDimOf(const Op& op, size_t outputRank) {
  int64_t axis = std::get<int64_t>(op.attrs.at("axis"));
  return axis == -1 ? outputRank - 1 : static_cast<size_t>(axis);
}

class OneHot : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    std::vector<int> idx = b.factorsFor(in.operands[0].shape);
    int depth = b.factor(std::get<int64_t>(in.constants.at(0)));
    int64_t axis = std::get<int64_t>(in.attrs.at("axis"));
    DimFactors outDims = single(idx);
    outDims.insert(axis == -1 ? outDims.end() : outDims.begin() + axis, std::vector<int>{depth});
    b.rule.operands.push_back(single(idx));
    for (size_t i = 1; i < in.operands.size(); ++i) b.rule.operands.push_back({});  // scalar on/off values
    b.rule.results = {outDims};
    return b.done();
  }

  std::optional<StrategyError> readSplits(const OpRule& rule, const OpView& op, const ShardStrategy& strategy,
                                          std::vector<int64_t>& splits) const override {
    const Shape& out = op.resultShapes[0];
    if (strategy.empty() || strategy[0].size() != out.size())
      return StrategyError{fmt::format("OneHot '{}' takes its strategy on the output (rank {}), then () for scalar operands",
                                       op.name, out.size()),
                           -1};
    for (size_t i = 1; i < strategy.size(); ++i)
      if (!strategy[i].empty())
        return StrategyError{fmt::format("OneHot '{}': strategy tuple {} must be () (a scalar operand)", op.name, i), -1};
    for (size_t d = 0; d < strategy[0].size(); ++d) {
      int64_t s = strategy[0][d];
      if (s < 1 || out[d] % s != 0)
        return StrategyError{fmt::format("OneHot '{}': {} does not divide dim {} of the output (size {}); valid: {}", op.name, s,
                                         d, out[d], divisorsText(out[d])),
                             -1};
      splits[rule.results[0][d][0]] = s;
    }
    return std::nullopt;
  }

  // MindSpore's form (parallel-semantics.md §2): the output's tuple, then () for on_value and
  // off_value.
  ShardStrategy strategyOf(const OpRule& rule, const OpSharding& s) const override {
    return {splitCounts(rule.results[0], s), {}, {}};
  }

  void insertBefore(Graph& graph, OpInserter& ins, OpId id, ReplaceGraph&) const override {
    const Op& op = graph.op(id);
    const TensorLayout& out = op.parallel->outputLayouts[0];
    size_t classDim = classDimOf(op, out.shape.size());
    std::vector<int> axes;
    for (int a : out.dims[classDim])
      if (out.mesh.dims[a] > 1) axes.push_back(a);
    if (axes.empty()) return;
    ValueId indices = op.operands[0].value;
    TensorType indexType = graph.value(indices).type;
    RedistStep offset;
    offset.kind = RedistStep::Kind::VocabOffset;
    offset.mesh = out.mesh;
    offset.axes = axes;
    offset.rows = out.sliceShape()[classDim];
    offset.globalAfter = indexType.shape;
    const std::string name = op.name;
    ValueId shifted = ins.add(fmt::format("{}.replace.0", name), fmt::format("replace_op_{}_0", name), "Sub",
                              {Operand::ofValue(indices), Operand::ofConstant(ScalarTensor{indexType.dtype, 0})}, {}, {indexType}, std::make_shared<const RedistStep>(offset),
                              fmt::format("{} one-hots only its {} classes [offset, offset + {}) on this rank", name, offset.rows,
                                          offset.rows));
    graph.op(id).operands[0].value = shifted;
  }

  // The rank one-hots its own class range: its local depth.
  void localize(Op& op) const override {
    const TensorLayout& out = op.parallel->outputLayouts[0];
    op.operands[1].constant = Attribute(out.sliceShape()[classDimOf(op, out.shape.size())]);
  }

  int64_t indexBound(const Graph&, const Op& op, size_t operand) const override {
    return operand == 0 ? std::get<int64_t>(*op.operands[1].constant) : -1;
  }
};

}  // namespace

const OpFamilyRules& oneHot() {
  static const OneHot rules;
  return rules;
}

}  // namespace irc::families
