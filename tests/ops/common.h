#pragma once
// Model snippets for the op-family tests: inputs and one configured op.
#include <string>
#include <vector>

#include "ops/op_defs.h"
#include "ops/reference_ops.h"
#include "ops/shape_inference.h"
#include "tests/pipeline_util.h"

namespace irc::test {

inline std::string oneOpModel(int devices, const std::string& inputs, const std::string& op) {
  return "parallel: {device_num: " + std::to_string(devices) + ", fully_use_devices: false}\ninputs:\n" + inputs + "ops:\n  - " +
         op + "\n";
}

// Evaluates one op of `type` on float32 operands (operand 1 holds int64 indices for the Gather and Scatter
// ops), then the constant operands, with the attribute defaults filled in.
inline std::vector<TensorValue> evaluateOne(const std::string& type, const std::vector<TensorValue>& operands,
                                            const std::vector<Attribute>& constants, AttrMap attrs) {
  Op op;
  op.name = "t";
  op.type = type;
  const OpDef& def = *findOpDef(type);
  for (const AttrSpec& a : def.attrs)
    if (!attrs.count(a.name) && a.defaultValue) attrs[a.name] = *a.defaultValue;
  op.attrs = attrs;
  std::vector<TensorType> types;
  const bool indexed =
      type.rfind("Gather", 0) == 0 || type.rfind("Scatter", 0) == 0 || type.rfind("Moe", 0) == 0;  // operand 1 holds indices
  for (size_t i = 0; i < operands.size(); ++i)
    types.push_back({i == 1 && indexed ? DType::Int64 : DType::Float32, operands[i].shape});
  std::vector<InferOperand> in;
  std::vector<const TensorValue*> values;
  for (size_t i = 0; i < operands.size(); ++i) in.push_back({&types[i], nullptr}), values.push_back(&operands[i]);
  for (const Attribute& c : constants) {
    in.push_back({nullptr, &c});
    values.push_back(nullptr);
    op.operands.push_back(Operand::ofConstant(c));
  }
  // Constant operands follow the tensors here; evaluateOp reads them by operand index.
  std::vector<Operand> ordered;
  for (size_t i = 0; i < operands.size(); ++i) ordered.push_back(Operand::ofValue(0));
  for (const Operand& c : op.operands) ordered.push_back(c);
  op.operands = ordered;
  auto results = std::get<std::vector<TensorType>>(inferResultTypes(def, in, op.attrs));
  return evaluateOp(op, values, results);
}

// The model compiles without errors and verifies (values compared) in both propagation modes.
inline void checkVerifiesInBothModes(const std::string& yaml) {
  for (SearchMode mode : {SearchMode::ShardingPropagation, SearchMode::FactorPropagation}) {
    CAPTURE(searchModeName(mode));
    Compiled c = compileAllRanks(yaml, mode);
    REQUIRE(c.errors == "");
    VerifyResult r = verifyCompiled(c);
    CHECK(r.ok);
    CHECK(r.comparedValues > 0);
  }
}

}  // namespace irc::test
