// Transpose: the result's dims are the operand's factors permuted.
#include "ops/inserted_ops.h"
#include "ops/families.h"
#include "ops/shape_inference.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferTranspose(const std::vector<InferOperand>& in) {
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

TensorValue transpose(const Op& op, const TensorValue& x, const Shape& outShape) {
  IntTuple perm = *normalizePerm(std::get<IntTuple>(constantOf(op, 1)), x.shape.size());
  TensorValue out = TensorValue::zeros(outShape);
  auto sx = stridesOf(x.shape);
  int64_t i = 0;
  forEach(outShape, [&](const Index& idx) {
    int64_t o = 0;
    for (size_t d = 0; d < perm.size(); ++d) o += idx[d] * sx[perm[d]];
    out.data[i++] = x.data[o];
  });
  return out;
}

class Transpose : public OpFamilyRules {
 public:
  // torch reads a weight through a transposed view (F.linear's `weight.t()`): the exporters'
  // Transpose of a parameter (a tied embedding as the output head) copies nothing. Of an
  // activation it is the copy a later kernel or reshape makes. (A training graph reads the
  // parameter through its mirror, an optimizer-parallel one through its gather.)
  bool resultIsView(const Graph& g, const Op& op) const override {
    return op.operands[0].isValue() && g.value(modelValueBehind(g, op.operands[0].value)).kind == ValueKind::Parameter;
  }
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  bool elementwiseForPropagation() const override { return true; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Transpose", OpFamily::Transpose, {tensor("x"), constant("perm", OperandKind::Tuple)}, {}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap&) const override {
    return inferTranspose(in);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {transpose(op, *in[0], results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.constants = {Attribute(IntTuple{1, 0})};
    s.note = "perm (1, 0)";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    std::vector<int> f = b.factorsFor(in.operands[0].shape);
    IntTuple perm = *normalizePerm(std::get<IntTuple>(in.constants.at(0)), in.operands[0].shape.size());
    DimFactors outDims;
    for (int64_t p : perm) outDims.push_back({f[p]});
    b.rule.operands = {single(f)};
    b.rule.results = {outDims};
    return b.done();
  }
  bool passesBatchDim0(const Graph& g, const Op& op) const override {
    auto perm = normalizePerm(std::get<IntTuple>(*op.operands[1].constant), g.value(op.results[0]).type.shape.size());
    return perm && !perm->empty() && (*perm)[0] == 0;
  }
  // Dim 0 became dims 0..extra: they stay in place, the others move as before, shifted past them.
  void prependBatchDims(Op& op, int64_t extra) const override {
    IntTuple perm =
        *normalizePerm(std::get<IntTuple>(*op.operands[1].constant), std::get<IntTuple>(*op.operands[1].constant).size());
    IntTuple widened;
    for (int64_t d = 0; d <= extra; ++d) widened.push_back(d);
    for (size_t d = 1; d < perm.size(); ++d) widened.push_back(perm[d] + extra);
    op.operands[1].constant = Attribute(widened);
  }
};

}  // namespace

const OpFamilyRules& transpose() {
  static const Transpose rules;
  return rules;
}

}  // namespace irc::families
