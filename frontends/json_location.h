#pragma once
// Where nlohmann-json stopped in a text: the line and column (1-based) of its parse error, for
// `FILE:LINE:COL` diagnostics (a config.json, a strategy checkpoint).
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/diagnostics.h"

namespace irc {

// The line and column of byte `offset` (0-based) of `text`.
inline SourceLoc locOfByte(const std::string& text, size_t offset) {
  SourceLoc loc{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') ++loc.line, loc.col = 1;
    else ++loc.col;
  }
  return loc;
}

// The byte nlohmann-json reports is 1-based: the one it could not take.
inline SourceLoc locOfParseError(const std::string& text, const nlohmann::json::parse_error& e) {
  return locOfByte(text, e.byte > 0 ? e.byte - 1 : 0);
}

}  // namespace irc
