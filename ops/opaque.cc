// An op irc has no semantics for (an ONNX node kept with --opaque-unsupported): every dim of
// every operand and result is a replicated factor, so its operands arrive whole on every rank
// and every rank computes the whole result.
#include "ops/families.h"
#include "ops/rule_builder.h"

namespace irc::families {
namespace {

// An opaque op's result is what its attributes say (ONNX's shape inference found it).
InferResult inferOpaque(const AttrMap& attrs) {
  auto dtype = parseDType(std::get<std::string>(attrs.at("dtype")));
  if (!dtype) return fail(fmt::format("dtype '{}' is not an irc dtype", std::get<std::string>(attrs.at("dtype"))), -1, "dtype");
  const Attribute& shape = attrs.at("shape");
  Shape out = std::holds_alternative<int64_t>(shape) ? Shape{std::get<int64_t>(shape)} : std::get<IntTuple>(shape);
  for (int64_t d : out)
    if (d < 0) return fail(fmt::format("shape {} has a negative dim", formatShape(out)), -1, "shape");
  return std::vector<TensorType>{{*dtype, out}};
}

// An opaque op has no semantics here: its result is a placeholder that depends only on the op's
// name, so that the single-device program and every rank (which hold its operands and result
// whole) agree on it and everything downstream can still be compared. Integer and bool results
// are zeros (an index into a table stays in range); floats are in [-1, 1).
TensorValue opaquePlaceholder(const Op& op, const TensorType& type) {
  TensorValue out = TensorValue::zeros(type.shape);
  if (!isFloat(type.dtype)) return out;
  uint64_t state = 1469598103934665603ull;  // FNV-1a of the name: the same on every machine
  for (unsigned char c : op.name) state = (state ^ c) * 1099511628211ull;
  state |= 1;
  for (double& v : out.data) {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;  // xorshift64
    v = static_cast<double>(state >> 11) / static_cast<double>(uint64_t{1} << 52) - 1.0;
  }
  return out;
}

class Opaque : public OpFamilyRules {
 public:
  // (irc) An ONNX node irc has no op for, kept with --opaque-unsupported: its ONNX type, its one
  // result's dtype and shape (from ONNX's shape inference); its operands and result are whole on
  // every rank, and the reference gives a placeholder result (docs/onnx.md).
  void define(std::vector<OpDef>& defs) const override {
    defs.push_back({"Opaque",
                    OpFamily::Opaque,
                    {{"inputs", OperandKind::TensorList, std::nullopt}},
                    {attr("op_type", AttrKind::String, std::nullopt), attr("dtype", AttrKind::String, std::nullopt),
                     attr("shape", AttrKind::IntOrTuple, std::nullopt)}});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>&, const AttrMap& attrs) const override {
    return inferOpaque(attrs);
  }
  std::vector<TensorValue> evaluate(const Op& op, const KernelInputs&, const std::vector<TensorType>& results) const override {
    return {opaquePlaceholder(op, results[0])};
  }
  void sample(const OpDef&, OpSample& s) const override {
    s.attrs["op_type"] = std::string("NonZero");
    s.attrs["dtype"] = std::string("float32");
    s.attrs["shape"] = IntTuple{8, 8};
    s.note = "an ONNX NonZero kept opaque";
  }
  std::optional<OpRule> rule(const RuleInputs& in) const override {
    RuleBuilder b;
    auto whole = [&](const Shape& shape) {
      DimFactors dims;
      for (int64_t d : shape) dims.push_back({b.factor(d, FactorKind::Replicated)});
      return dims;
    };
    for (const TensorType& t : in.operands) b.rule.operands.push_back(whole(t.shape));
    for (const TensorType& t : in.results) b.rule.results.push_back(whole(t.shape));
    return b.done();
  }
  std::string_view replicatedWhy() const override { return "a dim of an opaque op (irc does not know its semantics)"; }
};

}  // namespace

const OpFamilyRules& opaque() {
  static const Opaque rules;
  return rules;
}

}  // namespace irc::families
