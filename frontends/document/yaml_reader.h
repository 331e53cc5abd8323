#pragma once
// Checked accessors over yaml-cpp nodes: each reports a located diagnostic and returns nullopt
// instead of throwing, so one pass over a file collects every error in it.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/document/yaml_document.h"

#include "ir/diagnostics.h"

namespace irc {

SourceLoc locOf(const YamlNode& node);           // 1-based line and column of the node
std::string describeNode(const YamlNode& node);  // the offending value as written, for messages

class YamlReader {
 public:
  explicit YamlReader(DiagnosticEngine& diags) : diags_(diags) {}

  DiagnosticEngine& diags() const { return diags_; }

  // A mapping whose keys are all in `allowed` (unknown keys and duplicates are reported, with a
  // "did you mean"); `what` names it in messages ("parallel", "op 'matmul'"). `otherSpellings`:
  // another framework's name of a key -> the key and whose name it is, said instead.
  struct OtherSpelling {
    std::string key, whose;
  };
  bool checkMap(const YamlNode& node, std::string_view what, const std::vector<std::string>& allowed,
                const std::map<std::string, OtherSpelling>& otherSpellings = {});
  // The value of a required key, or an error at the map.
  std::optional<YamlNode> required(const YamlNode& map, std::string_view key, std::string_view what);
  std::optional<YamlNode> optional(const YamlNode& map, std::string_view key) const;

  std::optional<int64_t> integer(const YamlNode& node, std::string_view what);
  std::optional<double> number(const YamlNode& node, std::string_view what);
  std::optional<bool> boolean(const YamlNode& node, std::string_view what);
  std::optional<std::string> string(const YamlNode& node, std::string_view what);
  std::optional<std::vector<int64_t>> intList(const YamlNode& node, std::string_view what);
  std::optional<std::vector<std::string>> stringList(const YamlNode& node, std::string_view what);
  bool sequence(const YamlNode& node, std::string_view what);

  // A string naming one of `choices`, with "did you mean" and the valid list on failure.
  std::optional<std::string> choice(const YamlNode& node, std::string_view what, const std::vector<std::string>& choices);

  void error(const YamlNode& node, std::string message) { diags_.error(locOf(node), std::move(message)); }

 private:
  DiagnosticEngine& diags_;
};

// Plain scalar parsing without reporting (used to tell literals from names).
std::optional<int64_t> scalarAsInt(const YamlNode& node);
std::optional<double> scalarAsNumber(const YamlNode& node);

}  // namespace irc
