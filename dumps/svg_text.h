#pragma once
// Text inside an SVG document (op and model names may hold '<' or '&').
#include <string>

#include <fmt/format.h>

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

// An SVG document's opening: its size, a white background and the title at (titleX, titleY).
inline std::string svgDocumentStart(double width, double height, double titleX, double titleY, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"{3}\" font-size=\"15\">{4}</text>\n",
      width, height, titleX, titleY, svgEscaped(title));
}

}  // namespace irc
