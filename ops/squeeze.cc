// Squeeze: size-1 dims have no factor; the squeezed ones are dropped from the result.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

InferResult inferSqueeze(const std::vector<InferOperand>& in, const AttrMap& attrs) {
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
      return fail(fmt::format("cannot squeeze dim {} of shape {}: its size is {}, not 1", a, formatShape(x.shape), x.shape[*n]),
                  -1, "axis");
    drop[*n] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i]) out.push_back(x.shape[i]);
  return std::vector<TensorType>{{x.dtype, out}};
}

class Squeeze : public OpFamilyRules {
 public:
  bool resultIsView(const Graph&, const Op&) const override { return true; }
  // Its backward needs shapes only.
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  bool elementwiseForPropagation() const override { return true; }
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Squeeze", OpFamily::Squeeze, {tensor("x")}, {attr("axis", AttrKind::IntOrTuple, IntTuple{})}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    return inferSqueeze(in, attrs);
  }
  std::vector<TensorValue> evaluate(const Op&, const KernelInputs& in, const std::vector<TensorType>& results) const override {
    return {reshaped(*in[0], results[0].shape)};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.operands = {{DType::Float32, {8, 1}}};
    s.note = "(8, 1)";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    const Shape& shape = in.operands[0].shape;
    int64_t rank = static_cast<int64_t>(shape.size());
    const Attribute& axisAttr = in.attrs.at("axis");
    bool all = squeezesAll(axisAttr);
    std::vector<bool> dropped = all ? std::vector<bool>(rank, false) : namedDims(axisAttr, rank);
    DimFactors inDims, outDims;
    for (int64_t d = 0; d < rank; ++d) {
      if (all) dropped[d] = shape[d] == 1;
      std::vector<int> f = shape[d] == 1 ? std::vector<int>{} : std::vector<int>{b.factor(shape[d])};
      inDims.push_back(f);
      if (!dropped[d]) outDims.push_back(f);
    }
    b.rule.operands = {inDims};
    b.rule.results = {outDims};
    return b.done();
  }

  // `axis: ()` squeezes the dims of size 1 of the *global* shape; on a slice a split dim may
  // have size 1 too. MindSpore's SqueezeInfo likewise replaces it by the explicit axes.
  void localize(Op& op) const override {
    if (!squeezesAll(op.attrs.at("axis"))) return;
    IntTuple squeezed;
    const Shape& global = op.parallel->inputLayouts[0].shape;
    for (size_t d = 0; d < global.size(); ++d)
      if (global[d] == 1) squeezed.push_back(static_cast<int64_t>(d));
    if (!squeezed.empty()) {
      op.attrs["axis"] = Attribute(squeezed);
      return;
    }
    // Globally there is nothing to squeeze, but `()` would squeeze a dim split down to size 1
    // here: the rank's op is the identity, written as a Reshape to its own local shape (as
    // MindSpore replaces an op by its local equivalent).
    op.type = "Reshape";
    op.attrs.clear();
    op.operands.push_back(Operand::ofConstant(IntTuple(op.parallel->inputLayouts[0].sliceShape())));
  }

 private:
  static bool squeezesAll(const Attribute& axisAttr) {
    const IntTuple* axes = std::get_if<IntTuple>(&axisAttr);
    return axes && axes->empty();
  }
};

}  // namespace

const OpFamilyRules& squeeze() {
  static const Squeeze rules;
  return rules;
}

}  // namespace irc::families
