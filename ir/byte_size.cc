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
    error = fmt::format("'{}' is not a size (write e.g. 16GiB, 80GB or 1.5e9 bytes)", text);
    return std::nullopt;
  }
  // KB, MB, GB and TB of memory are JEDEC's binary units, as a device's memory is sold and as
  // MindSpore reads max_device_memory ("80GB": kGBToByte = 1024 << 20): an "80 GB" A100 holds
  // 80 GiB. A decimal size is written as a number (80e9).
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024, kTiB = kGiB * 1024;
  static const std::pair<const char*, double> units[] = {{"", 1},       {"B", 1},     {"KB", kKiB},  {"MB", kMiB},
                                                         {"GB", kGiB},  {"TB", kTiB}, {"KiB", kKiB}, {"MiB", kMiB},
                                                         {"GiB", kGiB}, {"TiB", kTiB}};
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
