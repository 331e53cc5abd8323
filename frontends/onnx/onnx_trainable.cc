#include "frontends/onnx/onnx_trainable.h"

#include <array>
#include <cctype>
#include <string_view>

#include "ops/op_family.h"

namespace irc::onnx_import {
namespace {

// The buffers of torch's and Hugging Face's modules that exports keep under their module path.
constexpr std::array<std::string_view, 10> kBufferNames = {
    "inv_freq",    "original_inv_freq",   "cos_cached",   "sin_cached",     "running_mean",
    "running_var", "num_batches_tracked", "position_ids", "token_type_ids", "masked_bias"};

// `m.model.layers.0.input_layernorm.weight`, `embeddings.cls_token`: dotted identifiers, as
// torch names a module's tensors. Exporters' own names (`val_93`, `onnx::MatMul_323`,
// `/layers.0/Constant_output_0`, `unsqueeze_16`) have no dot between identifiers or have
// `::` or `/`.
// Checked by a scan (a std::regex recurses once per character of a name).
bool isModulePath(const std::string& name) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  int dots = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    if (word(name[i])) continue;
    if (name[i] != '.' || i + 1 == name.size() || !word(name[i + 1])) return false;
    ++dots;
  }
  return dots > 0;
}

bool namesBuffer(const std::string& name) {
  std::string_view last = std::string_view(name).substr(name.rfind('.') + 1);
  for (std::string_view buffer : kBufferNames)
    if (last == buffer) return true;
  return false;
}

}  // namespace

int markUntrainedConstants(Graph& graph) {
  std::vector<bool> readAsWeight(graph.values.size(), false);
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    for (size_t i = 0; i < op.operands.size(); ++i)
      if (op.operands[i].isValue() && rulesOf(op).operandIsWeight(graph, op, i)) readAsWeight[op.operands[i].value] = true;
  }
  int untrained = 0;
  for (ValueId v : graph.parameters) {
    Value& value = graph.value(v);
    value.trainable = isModulePath(value.name) ? !namesBuffer(value.name) : readAsWeight[v];
    if (!value.trainable) ++untrained;
  }
  return untrained;
}

}  // namespace irc::onnx_import
