#include "frontends/onnx/onnx_module_path.h"

#include <google/protobuf/unknown_field_set.h>

#include <optional>
#include <vector>

#include <fmt/format.h>

namespace irc {
namespace {

constexpr int kMetadataPropsField = 9;  // NodeProto.metadata_props (onnx.proto, IR version 10)

// The strings of a Python list literal of quoted strings ("['', 'm', 'm.model']"); nullopt when
// it is not one.
std::optional<std::vector<std::string>> pythonStringList(const std::string& text) {
  std::vector<std::string> out;
  size_t i = text.find('[');
  if (i == std::string::npos || text.find(']', i) == std::string::npos) return std::nullopt;
  ++i;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    if (i >= text.size() || text[i] == ']') return out;
    char quote = text[i];
    if (quote != '\'' && quote != '"') return std::nullopt;
    size_t end = text.find(quote, i + 1);
    if (end == std::string::npos) return std::nullopt;
    out.push_back(text.substr(i + 1, end - i - 1));
    i = end + 1;
  }
  return std::nullopt;
}

// The deepest module of a scope list: each module scope extends its parent's path by ".name";
// the first entry that does not (a function such as 'scaled_dot_product_attention' or
// 'linear') ends the modules.
std::string deepestModule(const std::vector<std::string>& scopes) {
  std::string module;
  for (const std::string& scope : scopes) {
    if (scope.empty()) continue;
    if (!module.empty() && scope.rfind(module + ".", 0) != 0) break;
    module = scope;
  }
  return module;
}

// "/m/model/layers.0/self_attn/q_proj/MatMul" -> "m.model.layers.0.self_attn.q_proj".
std::string moduleOfTorchScriptName(const std::string& name) {
  if (name.size() < 2 || name[0] != '/') return "";
  size_t last = name.rfind('/');
  if (last == 0) return "";
  std::string module = name.substr(1, last - 1);
  for (char& c : module)
    if (c == '/') c = '.';
  return module;
}

}  // namespace

std::string modulePathOf(const onnx::NodeProto& node, std::string& error) {
  const auto& unknown = node.GetReflection()->GetUnknownFields(node);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& field = unknown.field(i);
    if (field.number() != kMetadataPropsField) continue;
    onnx::StringStringEntryProto entry;
    if (field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED ||
        !entry.ParseFromString(field.length_delimited())) {
      error = fmt::format("node '{}' has a metadata entry (field 9) that is not a key/value pair", node.name());
      return "";
    }
    if (entry.key() != "pkg.torch.onnx.name_scopes") continue;
    auto scopes = pythonStringList(entry.value());
    if (!scopes) {
      error = fmt::format("node '{}' has pkg.torch.onnx.name_scopes '{}', which is not a list of quoted names", node.name(),
                          entry.value().substr(0, 80));
      return "";
    }
    return deepestModule(*scopes);
  }
  return moduleOfTorchScriptName(node.name());
}

}  // namespace irc
