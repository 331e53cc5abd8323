#pragma once
// Python literals in the code irc writes (--torch-out, --mindspore-out).
#include <string>

namespace irc {

// A Python string literal (module paths and op names are UTF-8 text without control characters).
inline std::string pythonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace irc
