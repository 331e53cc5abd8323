#include "ir/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace irc {

std::optional<double> parseByteSize(std::string_view text, std::string& error) {
  std::string s(text);
  size_t end = 0;
  while (end < s.size() &&
         (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.' || s[end] == 'e' || s[end] == 'E' || s[end] == '+'))
    ++end;
  // "1e9" has an 'e' of the number; "1EB" would not parse as a unit anyway.
  std::string number = s.substr(0, end), unit = s.substr(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  char* stop = nullptr;
  double value = number.empty() ? NAN : std::strtod(number.c_str(), &stop);
  if (number.empty() || stop != number.c_str() + number.size() || !std::isfinite(value) || value < 0) {
    error = fmt::format("'{}' is not a size (write e.g. 16GiB, 80GB or 1.5e9)", text);
    return std::nullopt;
  }
  static const std::pair<const char*, double> units[] = {
      {"", 1},      {"B", 1},        {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
      {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (const auto& [name, scale] : units) {
    if (unit != name) continue;
    // Bytes are whole, and a size of nothing fits nothing: 0 (or 0.5B) is no budget a user meant.
    double bytes = std::round(value * scale);
    if (bytes < 1) {
      error = fmt::format("'{}' is less than one byte; a size is at least 1 B (leave the budget out for none)", text);
      return std::nullopt;
    }
    return bytes;
  }
  error = fmt::format("'{}' has the unit '{}'; valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB", text, unit);
  return std::nullopt;
}

std::string formatBytes(double bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} B", static_cast<int64_t>(bytes));
  double v = bytes / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.{}f} {}", v, v < 10 ? 2 : v < 100 ? 1 : 0, units[u]);
}

}  // namespace irc
