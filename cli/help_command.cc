// `irc --help`, `--list-ops`, `--list-passes`.
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/op_family.h"
#include "ops/op_rule.h"
#include "ops/shape_inference.h"
#include "passes/pipeline/pipeline.h"
#include "cli/commands.h"

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

void printListOps() {
  for (const OpDef& def : allOpDefs()) {
    if (def.insertedOnly) continue;
    OpSample sample = sampleOf(def);
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
