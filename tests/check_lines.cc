#include "tests/check_lines.h"

#include <optional>
#include <sstream>
#include <vector>

namespace irc::test {

namespace {
std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b);
}
}  // namespace

std::string checkLines(const std::string& text, const std::string& directives) {
  std::vector<std::string> textLines = lines(text);
  size_t cursor = 0;    // first line a CHECK may match
  long lastMatch = -1;  // line of the previous match
  std::vector<std::string> pendingNot;
  for (const std::string& raw : lines(directives)) {
    std::string d = trimmed(raw);
    if (d.empty()) continue;
    auto take = [&](const char* prefix) -> std::optional<std::string> {
      std::string p = prefix;
      if (d.rfind(p, 0) != 0) return std::nullopt;
      return trimmed(d.substr(p.size()));
    };
    if (auto pat = take("CHECK-NOT:")) {
      pendingNot.push_back(*pat);
    } else if (auto pat2 = take("CHECK-NEXT:")) {
      size_t line = static_cast<size_t>(lastMatch + 1);
      if (line >= textLines.size() || textLines[line].find(*pat2) == std::string::npos)
        return "CHECK-NEXT: '" + *pat2 + "' is not on the line after the previous match (line " + std::to_string(line + 1) + ")";
      lastMatch = static_cast<long>(line);
      cursor = line + 1;
    } else if (auto pat3 = take("CHECK:")) {
      size_t found = cursor;
      while (found < textLines.size() && textLines[found].find(*pat3) == std::string::npos) ++found;
      if (found >= textLines.size()) return "CHECK: '" + *pat3 + "' not found after line " + std::to_string(cursor);
      for (const auto& n : pendingNot)
        for (size_t l = cursor; l < found; ++l)
          if (textLines[l].find(n) != std::string::npos) return "CHECK-NOT: '" + n + "' found on line " + std::to_string(l + 1);
      pendingNot.clear();
      lastMatch = static_cast<long>(found);
      cursor = found + 1;
    } else {
      return "unknown directive: " + d;
    }
  }
  for (const auto& n : pendingNot)
    for (size_t l = cursor; l < textLines.size(); ++l)
      if (textLines[l].find(n) != std::string::npos) return "CHECK-NOT: '" + n + "' found on line " + std::to_string(l + 1);
  return {};
}

}  // namespace irc::test
