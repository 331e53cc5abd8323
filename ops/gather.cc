// Gather: the table's dims pass through but the gathered one, which the indices' dims replace.
// A split vocabulary (axis 0) is a reduction: each rank looks up only the rows it holds, with
// ops.md's masked lookup as its replace graph, and the AllReduce sums the ranks' rows.
#include <fmt/format.h>

#include "ir/layout_notation.h"
#include "ops/shape_inference.h"
#include "ops/families.h"
#include "ops/rule_builder.h"
#include "ops/op_inserter.h"

namespace irc::families {
namespace {

InferResult inferGather(const std::vector<InferOperand>& in) {
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

TensorValue gather(const Op& op, const TensorValue& params, const TensorValue& indices, const Shape& outShape) {
  int64_t axis = *normalizeAxis(std::get<int64_t>(constantOf(op, 2)), params.shape.size());
  TensorValue out = TensorValue::zeros(outShape);
  auto sp = stridesOf(params.shape), si = stridesOf(indices.shape);
  size_t ir = indices.shape.size();
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    Index pi(params.shape.size());
    for (int64_t d = 0; d < axis; ++d) pi[d] = idx[d];
    Index ii(idx.begin() + axis, idx.begin() + axis + ir);
    double raw = indices.data[offsetOf(ii, si)];
    int64_t row = static_cast<int64_t>(raw);
    if (row < 0 || row >= params.shape[axis])
      throw ReferenceError(fmt::format("Gather '{}': index {} is outside the table (size {})", op.name, raw, params.shape[axis]));
    pi[axis] = row;
    for (size_t d = axis + 1; d < params.shape.size(); ++d) pi[d] = idx[d - 1 + ir];
    out.data[i++] = params.data[offsetOf(pi, sp)];
  });
  return out;
}

int vocabFactor(const OpRule& rule) {
  for (int f = 0; f < rule.factorCount(); ++f)
    if (rule.isReduction(f)) return f;
  return -1;
}

class Gather : public OpFamilyRules {
 public:
  // An embedding table.
  bool operandIsWeight(const Graph&, const Op&, size_t operand) const override { return operand == 0; }
  ModulePart modulePart(const Op&) const override { return {ModulePart::Kind::Lookup, 1, 0}; }
  // The indices route the gradient back.
  SavedForBackward savedForBackward(const Op&) const override { return {{1}, {}, {}}; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back(
        {"Gather", OpFamily::Gather, {tensor("params"), tensor("indices"), constant("axis", OperandKind::Int, int64_t{0})}, {}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferGather(in);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {gather(op, *in[0], *in[1], results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands.push_back({DType::Int32, {4, 8}});
    s.constants = {Attribute(int64_t{0})};
    s.note = "axis 0";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    const Shape& table = in.operands[0].shape;
    int64_t rank = static_cast<int64_t>(table.size());
    int64_t axis = *normalizeAxis(std::get<int64_t>(in.constants.at(0)), rank);
    // A gathered dim at an axis other than 0 has no masked lowering here, so it is never split:
    // a strategy that splits it is rejected, propagation does not pick one.
    FactorKind gathered = axis == 0 ? FactorKind::Reduction : FactorKind::Replicated;
    std::vector<int> p;
    for (int64_t d = 0; d < rank; ++d) p.push_back(b.factor(table[d], d == axis ? gathered : FactorKind::PassThrough));
    std::vector<int> idx = b.factorsFor(in.operands[1].shape);
    DimFactors outDims;
    for (int64_t d = 0; d < axis; ++d) outDims.push_back({p[d]});
    for (int f : idx) outDims.push_back({f});
    for (int64_t d = axis + 1; d < rank; ++d) outDims.push_back({p[d]});
    b.rule.operands = {single(p), single(idx)};
    b.rule.results = {outDims};
    return b.done();
  }

  std::optional<StrategyError> checkSplits(const OpRule& rule, const OpView& op,
                                           const std::vector<int64_t>& splits) const override {
    int vocab = vocabFactor(rule);
    // MindSpore's GatherInfo splits a table of any rank on the dims it passes through (the batch
    // of a fused QKV picked by `aten.select`); a split looked-up dim needs rank 1 or 2.
    if (op.operandShapes[0].size() > 2 && vocab >= 0 && splits[vocab] > 1)
      return StrategyError{fmt::format("Gather '{}': MindSpore splits the looked-up dim of a Gather's params only at rank 1 or "
                                       "2; '{}' has shape {}",
                                       op.name, op.operandNames[0], formatShape(op.operandShapes[0])),
                           0};
    bool indicesSplit = false;
    for (const auto& dim : rule.operands[1])
      for (int f : dim) indicesSplit |= splits[f] > 1;
    if (vocab >= 0 && splits[vocab] > 1 && indicesSplit)
      return StrategyError{
          fmt::format("Gather '{}' splits its params' axis dim {} ways; MindSpore then requires the indices unsplit", op.name,
                      splits[vocab]),
          1};
    return std::nullopt;
  }

  // MindSpore's GatherInfo with a split vocabulary repeats on the left of its device matrix.
  bool repeatOnLeft(const OpRule& rule, const std::vector<int64_t>& splits) const override {
    int vocab = vocabFactor(rule);
    return vocab >= 0 && splits[vocab] > 1;
  }

  // MindSpore's data parallel splits the indices' batch (which also keeps the output whole).
  int batchOperand() const override { return 1; }
  std::string_view partialWhy() const override { return "looks up a split vocabulary"; }
  bool reductionMayMoveToEdge() const override { return false; }

  // Before the lookup, where the table's rows are split (its reduction factor on axes of size >
  // 1): s = Sub(indices, offset), r = ReLU(s), m = Minimum(r, rows - 1), e = Equal(s, m), and
  // the Gather reads m.
  void insertBefore(Graph& graph, OpInserter& ins, OpId id, ReplaceGraph& replace) const override {
    const Op& op = graph.op(id);
    if (op.parallel->forwardOps.empty()) return;
    const TensorLayout& params = op.parallel->inputLayouts[0];
    int64_t axis = std::get<int64_t>(*op.operands[2].constant);
    if (axis < 0) axis += static_cast<int64_t>(params.shape.size());
    std::vector<int> axes;
    for (int a : params.dims[axis])
      if (params.mesh.dims[a] > 1) axes.push_back(a);
    if (axes.empty()) return;
    int64_t rows = params.sliceShape()[axis];
    ValueId indices = op.operands[1].value;
    TensorType indexType = graph.value(indices).type;
    DType idx = indexType.dtype;
    const std::string name = op.name;
    auto next = [&] { return replaceNames(name, replace.nextIndex++); };
    RedistStep offset;
    offset.kind = RedistStep::Kind::VocabOffset;
    offset.mesh = params.mesh;
    offset.axes = axes;
    offset.rows = rows;
    offset.globalAfter = indexType.shape;
    auto [n0, i0] = next();
    std::string why = fmt::format("{} holds table rows [offset, offset + {}) on this rank: shift the indices", name, rows);
    ValueId s = ins.add(n0, i0, "Sub", {Operand::ofValue(indices), Operand::ofConstant(ScalarTensor{idx, 0})}, {}, {indexType},
                        std::make_shared<const RedistStep>(offset), why);
    auto [n1, i1] = next();
    ValueId r = ins.add(n1, i1, "ReLU", {Operand::ofValue(s)}, {}, {indexType}, nullptr, "clamp indices below the rows held");
    auto [n2, i2] = next();
    ValueId m =
        ins.add(n2, i2, "Minimum", {Operand::ofValue(r), Operand::ofConstant(ScalarTensor{idx, static_cast<double>(rows - 1)})},
                {}, {indexType}, nullptr, "clamp indices above the rows held");
    auto [n3, i3] = next();
    ValueId e = ins.add(n3, i3, "Equal", {Operand::ofValue(s), Operand::ofValue(m)}, {}, {{DType::Bool, indexType.shape}},
                        nullptr, "true where the index falls in the rows held");
    // The Gather itself is node 4 of the replace graph (ops.md): it prints as `<op>.replace.4`.
    auto [n4, i4] = next();
    Op& gather = graph.op(id);
    gather.operands[1].value = m;
    gather.printedName = n4;
    gather.instanceName = i4;
    replace.active = true;
    replace.mask = e;
  }

  // After the Gather g (`.replace.4`): c = Cast(e, dtype), x = ExpandDims(c, -1), y = Mul(g, x),
  // `.replace.5` to `.7`; consumers (first the AllReduce) read y.
  ValueId insertAfter(Graph& graph, OpInserter& ins, OpId id, const ReplaceGraph& replace, ValueId g) const override {
    if (!replace.active) return g;
    const std::string name = graph.op(id).name;
    TensorType out = graph.value(g).type;
    Shape mask = graph.value(replace.mask).type.shape;
    int counter = replace.nextIndex;
    auto next = [&] { return replaceNames(name, counter++); };
    auto [n5, i5] = next();
    ValueId c = ins.add(n5, i5, "Cast", {Operand::ofValue(replace.mask), Operand::ofConstant(out.dtype)}, {}, {{out.dtype, mask}},
                        nullptr, "the mask as numbers");
    ValueId x = c;
    if (out.shape.size() > mask.size()) {
      mask.push_back(1);
      auto [n6, i6] = next();
      x = ins.add(n6, i6, "ExpandDims", {Operand::ofValue(c), Operand::ofConstant(int64_t{-1})}, {}, {{out.dtype, mask}}, nullptr,
                  "broadcast the mask over the embedding dim");
    }
    auto [n7, i7] = next();
    return ins.add(n7, i7, "Mul", {Operand::ofValue(g), Operand::ofValue(x)}, {}, {out}, nullptr,
                   "zero the rows this rank does not hold; the AllReduce sums the ranks' rows");
  }

  int64_t indexBound(const Graph& g, const Op& op, size_t operand) const override {
    if (operand != 1) return -1;
    const Shape& table = g.value(op.operands[0].value).type.shape;
    return table[static_cast<size_t>((std::get<int64_t>(*op.operands[2].constant) + table.size()) % table.size())];
  }

 private:
  static std::pair<std::string, std::string> replaceNames(const std::string& op, int k) {
    return {fmt::format("{}.replace.{}", op, k), fmt::format("replace_op_{}_{}", op, k)};
  }
};

}  // namespace

const OpFamilyRules& gather() {
  static const Gather rules;
  return rules;
}

}  // namespace irc::families
