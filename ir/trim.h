#pragma once
// The one trim of every reader of text (notations, irc's and MindSpore's dumps): blanks — spaces
// and tabs — off both ends.
#include <string_view>

namespace irc {

inline std::string_view trimmed(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace irc
