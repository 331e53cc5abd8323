// MindSpore's Send and Receive, which the redistribution pass inserts where a value crosses
// pipeline stages (docs/pipeline.md). Send ships its operand's local slice to the rank of the
// same position in the consuming stage and passes it on unchanged; Receive makes that slice on
// the consuming rank. In the global graph a Receive reads its Send's result, which pairs them
// and keeps the data alive until it is received; a rank's own graph has no such operand, and the
// Receive's `shape` and `dtype` give its result.
#include "ops/families.h"

namespace irc::families {
namespace {

class PipelineTransfer : public OpFamilyRules {
 public:
  SavedForBackward savedForBackward(const Op&) const override { return {}; }
  void define(std::vector<OpDef>& defs) const override {
    // Attribute names as MindSpore's pipeline split gives them (pipeline_transformer.cc);
    // `group_ranks` is irc's, as on every collective.
    auto common = [](const char* peer) {
      return std::vector<AttrSpec>{
          attr("sr_tag", AttrKind::Int, std::nullopt),         attr(peer, AttrKind::Int, std::nullopt),
          attr("group", AttrKind::String, std::nullopt),       attr("group_back", AttrKind::String, std::nullopt),
          attr("group_ranks", AttrKind::String, std::nullopt), attr("shape", AttrKind::IntOrTuple, std::nullopt),
          attr("dtype", AttrKind::String, std::nullopt)};
    };
    defs.push_back({"Send", OpFamily::Send, {tensor("x")}, common("dest_rank"), true});
    defs.push_back({"Receive", OpFamily::Receive, {{"x", OperandKind::TensorList, std::nullopt}}, common("src_rank"), true});
  }
  InferResult inferTypes(const OpDef&, const std::vector<InferOperand>& in, const AttrMap& attrs) const override {
    if (!in.empty() && in[0].tensor) return std::vector<TensorType>{*in[0].tensor};
    // `dtype` as the dump spells it (Float32).
    const auto* name = std::get_if<std::string>(&attrs.at("dtype"));
    std::optional<DType> dtype = name ? parseDumpDType(*name) : std::nullopt;
    if (!dtype) return fail("Receive's dtype attribute is not a dtype");
    const Attribute& shape = attrs.at("shape");
    Shape dims = std::holds_alternative<IntTuple>(shape) ? std::get<IntTuple>(shape) : Shape{std::get<int64_t>(shape)};
    return std::vector<TensorType>{{*dtype, dims}};
  }
  // In one program (the single-device reference, a global graph) both are the identity.
  std::vector<TensorValue> evaluate(const Op&, const KernelInputs& in, const std::vector<TensorType>&) const override {
    return {*in.at(0)};
  }
  std::optional<OpRule> rule(const RuleInputs&) const override { return std::nullopt; }
  // A Send runs on its own rank (it passes its operand on); a Receive takes what its Send passed.
  RunsAs runsAs(const OpDef& def) const override { return def.family == OpFamily::Receive ? RunsAs::Receive : RunsAs::EachRank; }
};

}  // namespace

const OpFamilyRules& pipelineTransfer() {
  static const PipelineTransfer rules;
  return rules;
}

}  // namespace irc::families
