#pragma once
// Text inside an SVG document (op and model names may hold '<' or '&').
#include <string>

namespace irc {

inline std::string svgEscaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace irc
