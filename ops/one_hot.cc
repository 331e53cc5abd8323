// OneHot: the indices' dims pass through and the class dim (depth) is a new factor. MindSpore
// writes its strategy on the output, then () for on_value and off_value. A split class dim
// one-hots each rank's class range [offset, offset + depth/n): the indices are shifted first,
// and out-of-range indices give off_value as they must.
#include <fmt/format.h>

#include "ir/layout_notation.h"
#include "ops/families.h"
#include "ops/rule_builder.h"
#include "ops/op_inserter.h"

namespace irc::families {
namespace {

InferResult inferOneHot(const std::vector<InferOperand>& in, const AttrMap& attrs) {
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

TensorValue oneHot(const Op& op, const KernelInputs& in, const Shape& outShape) {
  auto scalar = [&](size_t i) { return in[i] ? in[i]->data[0] : std::get<ScalarTensor>(constantOf(op, i)).value; };
  double on = scalar(2), off = scalar(3);
  int64_t axis = intAttr(op, "axis");
  int64_t pos = axis == -1 ? static_cast<int64_t>(outShape.size()) - 1 : axis;
  TensorValue out = TensorValue::zeros(outShape);
  auto si = stridesOf(in[0]->shape);
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    Index ii;
    for (size_t d = 0; d < idx.size(); ++d)
      if (static_cast<int64_t>(d) != pos) ii.push_back(idx[d]);
    out.data[i++] = static_cast<int64_t>(in[0]->data[offsetOf(ii, si)]) == idx[pos] ? on : off;
  });
  return out;
}

size_t classDimOf(const Op& op, size_t outputRank) {
  int64_t axis = std::get<int64_t>(op.attrs.at("axis"));
  return axis == -1 ? outputRank - 1 : static_cast<size_t>(axis);
}

class OneHot : public OpFamilyRules {
 public:
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"OneHot",
                    OpFamily::OneHot,
                    {tensor("indices"),
                     constant("depth", OperandKind::Int),
                     {"on_value", OperandKind::TensorOrScalar, std::nullopt},
                     {"off_value", OperandKind::TensorOrScalar, std::nullopt}},
                    {attr("axis", AttrKind::Int, int64_t{-1})}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferOneHot(in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {oneHot(op, in, results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Int32, {8}}};
    s.constants = {Attribute(int64_t{16}), Attribute(ScalarTensor{}), Attribute(ScalarTensor{})};
    s.note = "depth 16";
  }
  StrategyForm strategyForm() const override { return StrategyForm::OnOutput; }
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
      return StrategyError{
          fmt::format("OneHot '{}' takes its strategy on the output (rank {}), then () for scalar operands", op.name, out.size()),
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
    ValueId shifted = ins.add(
        fmt::format("{}.replace.0", name), fmt::format("replace_op_{}_0", name), "Sub",
        {Operand::ofValue(indices), Operand::ofConstant(ScalarTensor{indexType.dtype, 0})}, {}, {indexType},
        std::make_shared<const RedistStep>(offset),
        fmt::format("{} one-hots only its {} classes [offset, offset + {}) on this rank", name, offset.rows, offset.rows));
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
