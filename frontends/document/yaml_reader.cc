#include "frontends/document/yaml_reader.h"

#include "ir/names.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "ir/suggest.h"

namespace irc {

SourceLoc locOf(const YamlNode& node) {
  YAML::Mark m = node.Mark();
  if (m.line < 0) return {};
  return {m.line + 1, m.column + 1};
}

std::string describeNode(const YamlNode& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsScalar()) return fmt::format("'{}'", node.Scalar());
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "a value";
}

std::optional<int64_t> scalarAsInt(const YamlNode& node) {
  if (!node.IsScalar()) return std::nullopt;
  const std::string& s = node.Scalar();
  int64_t v = 0;
  const char* begin = s.data();
  if (!s.empty() && s[0] == '+') ++begin;
  auto [p, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> scalarAsNumber(const YamlNode& node) {
  if (!node.IsScalar()) return std::nullopt;
  const std::string& s = node.Scalar();
  if (s.empty()) return std::nullopt;
  // from_chars for double is in libstdc++ 11+; it accepts "1e-7", "0.5", "-3".
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool YamlReader::checkMap(const YamlNode& node, std::string_view what, const std::vector<std::string>& allowed,
                          const std::map<std::string, OtherSpelling>& otherSpellings) {
  if (!node.IsMap()) {
    error(node, fmt::format("{} must be a mapping; got {}", what, describeNode(node)));
    return false;
  }
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    // A copy: yaml-cpp's iterator returns a temporary proxy, so `const Node& = it->first` dangles.
    const YamlNode key = it->first;
    if (!key.IsScalar()) {
      error(key, fmt::format("{} has a key that is not a name", what));
      continue;
    }
    const std::string& k = key.Scalar();
    if (!seen.insert(k).second) {
      error(key, fmt::format("duplicate key '{}' in {}", k, what));
      continue;
    }
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      if (auto other = otherSpellings.find(k); other != otherSpellings.end()) {
        error(key,
              fmt::format("unknown key '{}' in {}: {} '{}' is '{}' here", k, what, other->second.whose, k, other->second.key));
        continue;
      }
      auto match = closestMatch(k, allowed);
      error(key, match ? fmt::format("unknown key '{}' in {}; did you mean '{}'?", k, what, *match)
                       : fmt::format("unknown key '{}' in {}; valid keys: {}", k, what, joinNames(allowed)));
    }
  }
  return true;
}

std::optional<YamlNode> YamlReader::optional(const YamlNode& map, std::string_view key) const {
  YamlNode value = map.find(key);
  if (!value.IsDefined()) return std::nullopt;
  return value;
}

std::optional<YamlNode> YamlReader::required(const YamlNode& map, std::string_view key, std::string_view what) {
  auto v = optional(map, key);
  if (!v) error(map, fmt::format("missing key '{}' in {}", key, what));
  return v;
}

std::optional<int64_t> YamlReader::integer(const YamlNode& node, std::string_view what) {
  auto v = scalarAsInt(node);
  if (!v) error(node, fmt::format("{} must be an integer; got {}", what, describeNode(node)));
  return v;
}

std::optional<double> YamlReader::number(const YamlNode& node, std::string_view what) {
  auto v = scalarAsNumber(node);
  if (!v) error(node, fmt::format("{} must be a number; got {}", what, describeNode(node)));
  return v;
}

std::optional<bool> YamlReader::boolean(const YamlNode& node, std::string_view what) {
  if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    if (s == "true" || s == "True") return true;
    if (s == "false" || s == "False") return false;
  }
  error(node, fmt::format("{} must be true or false; got {}", what, describeNode(node)));
  return std::nullopt;
}

std::optional<std::string> YamlReader::string(const YamlNode& node, std::string_view what) {
  if (node.IsScalar() && !node.Scalar().empty()) {
    // Names end up in dumps, reports and diagnostics: a control character could forge a dump
    // line, invalid UTF-8 cannot be written as JSON.
    if (auto problem = nameProblem(node.Scalar())) {
      error(node, fmt::format("{} {}", what, *problem));
      return std::nullopt;
    }
    return node.Scalar();
  }
  error(node, fmt::format("{} must be a name; got {}", what, describeNode(node)));
  return std::nullopt;
}

bool YamlReader::sequence(const YamlNode& node, std::string_view what) {
  if (node.IsSequence()) return true;
  error(node, fmt::format("{} must be a list; got {}", what, describeNode(node)));
  return false;
}

std::optional<std::vector<int64_t>> YamlReader::intList(const YamlNode& node, std::string_view what) {
  if (!sequence(node, what)) return std::nullopt;
  std::vector<int64_t> out;
  bool ok = true;
  for (const YamlNode& e : node) {
    auto v = scalarAsInt(e);
    if (!v) {
      error(e, fmt::format("{} must be a list of integers; got {}", what, describeNode(e)));
      ok = false;
    } else {
      out.push_back(*v);
    }
  }
  return ok ? std::optional(out) : std::nullopt;
}

std::optional<std::vector<std::string>> YamlReader::stringList(const YamlNode& node, std::string_view what) {
  if (!sequence(node, what)) return std::nullopt;
  std::vector<std::string> out;
  bool ok = true;
  for (const YamlNode& e : node) {
    if (!e.IsScalar() || e.Scalar().empty()) {
      error(e, fmt::format("{} must be a list of names; got {}", what, describeNode(e)));
      ok = false;
    } else if (auto problem = nameProblem(e.Scalar())) {
      error(e, fmt::format("an entry of {} {}", what, *problem));
      ok = false;
    } else {
      out.push_back(e.Scalar());
    }
  }
  return ok ? std::optional(out) : std::nullopt;
}

std::optional<std::string> YamlReader::choice(const YamlNode& node, std::string_view what,
                                              const std::vector<std::string>& choices) {
  auto s = string(node, what);
  if (!s) return std::nullopt;
  if (std::find(choices.begin(), choices.end(), *s) != choices.end()) return s;
  auto match = closestMatch(*s, choices);
  error(node, match ? fmt::format("{} '{}' is not known; did you mean '{}'?", what, *s, *match)
                    : fmt::format("{} '{}' is not known; valid: {}", what, *s, joinNames(choices)));
  return std::nullopt;
}

}  // namespace irc
