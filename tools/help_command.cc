// `irc --help`, `--list-ops`, `--list-passes`.
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/op_defs.h"
#include "ir/shape_inference.h"
#include "passes/op_rule.h"
#include "passes/pipeline.h"
#include "tools/commands.h"

namespace irc::cli {

namespace {

std::string operandSummary(const OperandSpec& o) {
  switch (o.kind) {
    case OperandKind::Tensor: return o.name;
    case OperandKind::TensorList: return o.name + "...";
    case OperandKind::TensorOrScalar: return o.name;
    default: return o.defaultValue ? fmt::format("{}={}", o.name, formatAttribute(*o.defaultValue)) : o.name;
  }
}

}  // namespace

namespace {

// A sample call of each op for showing its rule: operand types, constants and attrs.
struct Sample {
  std::vector<TensorType> operands;
  std::vector<Attribute> constants;
  AttrMap attrs;
  std::string note;  // the sample's shapes when the rule depends on them
};

Sample sampleFor(const OpDef& def) {
  TensorType m{DType::Float32, {8, 8}};
  AttrMap attrs;
  for (const auto& a : def.attrs)
    if (a.defaultValue) attrs[a.name] = *a.defaultValue;
  switch (def.family) {
    case OpFamily::BatchMatMul: return {{{DType::Float32, {2, 8, 8}}, {DType::Float32, {2, 8, 8}}}, {}, attrs, "(2, 8, 8) x (2, 8, 8)"};
    case OpFamily::BiasAdd: return {{m, {DType::Float32, {8}}}, {}, attrs, ""};
    case OpFamily::Cast: return {{m}, {Attribute(DType::Float16)}, attrs, ""};
    case OpFamily::Reduce: return {{m}, {Attribute(int64_t{1})}, attrs, "axis 1"};
    case OpFamily::Reshape: return {{{DType::Float32, {2, 4, 8}}}, {Attribute(IntTuple{8, 8})}, attrs, "(2, 4, 8) -> (8, 8)"};
    case OpFamily::Transpose: return {{m}, {Attribute(IntTuple{1, 0})}, attrs, "perm (1, 0)"};
    case OpFamily::ExpandDims: return {{m}, {Attribute(int64_t{0})}, attrs, "axis 0"};
    case OpFamily::Squeeze: return {{{DType::Float32, {8, 1}}}, {}, attrs, "(8, 1)"};
    case OpFamily::Gather: return {{m, {DType::Int32, {4, 8}}}, {Attribute(int64_t{0})}, attrs, "axis 0"};
    case OpFamily::Concat: return {{m, m}, {}, attrs, "two inputs, axis 0"};
    case OpFamily::Split: attrs["output_num"] = int64_t{2}; return {{m}, {}, attrs, "output_num 2, axis 0"};
    case OpFamily::LayerNorm: return {{m, {DType::Float32, {8}}, {DType::Float32, {8}}}, {}, attrs, ""};
    case OpFamily::Slice: return {{m}, {Attribute(IntTuple{0, 2}), Attribute(IntTuple{8, 4})}, attrs, "begin (0, 2), size (8, 4)"};
    case OpFamily::BroadcastTo: return {{{DType::Float32, {1, 8}}}, {Attribute(IntTuple{8, 8})}, attrs, "(1, 8) to (8, 8)"};
    case OpFamily::Opaque:
      attrs["op_type"] = std::string("Conv");
      attrs["dtype"] = std::string("float32");
      attrs["shape"] = IntTuple{8, 8};
      return {{m}, {}, attrs, "an ONNX Conv kept opaque"};
    case OpFamily::OneHot:
      return {{{DType::Int32, {8}}}, {Attribute(int64_t{16}), Attribute(ScalarTensor{}), Attribute(ScalarTensor{})}, attrs,
              "depth 16"};
    case OpFamily::Select: return {{{DType::Bool, {8, 8}}, m, m}, {}, attrs, ""};
    case OpFamily::Broadcast:
    case OpFamily::MatMul:
    case OpFamily::SoftmaxCrossEntropy: return {{m, m}, {}, attrs, ""};
    default: return {{m}, {}, attrs, ""};
  }
}

}  // namespace

void printListOps() {
  for (const OpDef& def : allOpDefs()) {
    if (def.insertedOnly) continue;
    Sample sample = sampleFor(def);
    std::vector<InferOperand> in;
    size_t t = 0, c = 0;
    for (const auto& o : def.operands) {
      if (o.kind == OperandKind::TensorList) {
        while (t < sample.operands.size()) in.push_back({&sample.operands[t++], nullptr});
      } else if (o.kind == OperandKind::Tensor || (o.kind == OperandKind::TensorOrScalar && c >= sample.constants.size())) {
        in.push_back({&sample.operands[t++], nullptr});
      } else {
        in.push_back({nullptr, &sample.constants[c++]});
      }
    }
    auto types = std::get<std::vector<TensorType>>(inferResultTypes(def, in, sample.attrs));
    std::vector<TensorType> tensorOperands(sample.operands.begin(), sample.operands.begin() + t);
    auto rule = buildRule(def, tensorOperands, sample.constants, sample.attrs, types);
    std::vector<std::string> operands, attrs;
    for (const auto& o : def.operands) operands.push_back(operandSummary(o));
    for (const auto& a : def.attrs)
      attrs.push_back(a.defaultValue ? fmt::format("{}={}", a.name, formatAttribute(*a.defaultValue)) : a.name);
    std::cout << fmt::format("{} {}{}\n", def.type, rule ? rule->print() : "-",
                             sample.note.empty() ? "" : fmt::format("   [{}]", sample.note));
    std::cout << fmt::format("    {}({}){}\n", def.type, fmt::join(operands, ", "),
                             attrs.empty() ? "" : fmt::format(" attrs: {}", fmt::join(attrs, ", ")));
  }
}

void printListPasses() {
  for (const PipelineStage& s : pipelineStages()) {
    std::string names = s.passName == s.dumpName ? s.passName : fmt::format("{} ({})", s.passName, s.dumpName);
    std::cout << fmt::format("{:02d} {:<44} {}\n", s.position, names, s.description);
  }
}

}  // namespace irc::cli
