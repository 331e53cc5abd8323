#include "ir/names.h"

#include <fmt/format.h>

namespace irc {
namespace {

// The length of the UTF-8 sequence starting at `i`, or 0 when it is malformed (overlong forms,
// surrogates and code points past U+10FFFF included).
size_t utf8Length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  unsigned char c1 = byte(i + 1);
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return 0;
  return n;
}

bool isControl(unsigned char c) { return c < 0x20 || c == 0x7F; }

}  // namespace

std::optional<std::string> nameProblem(std::string_view name) {
  for (size_t i = 0; i < name.size();) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (isControl(c))
      return fmt::format("'{}' contains a control character (U+{:04X}) at byte {}; names may not contain control characters",
                         escapedName(name), c, i);
    size_t n = utf8Length(name, i);
    if (n == 0)
      return fmt::format("'{}' is not valid UTF-8 (byte 0x{:02X} at byte {}); names must be UTF-8 text", escapedName(name), c, i);
    i += n;
  }
  return std::nullopt;
}

std::string escapedName(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    size_t n = isControl(c) ? 0 : utf8Length(name, i);
    if (n == 0) {
      out += fmt::format("\\x{:02X}", c);
      ++i;
    } else {
      out.append(name.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace irc
