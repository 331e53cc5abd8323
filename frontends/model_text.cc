#include "frontends/model_text.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "ir/limits.h"

namespace irc {

std::optional<std::string> readModelText(const std::string& path, std::string& error) {
  // At most kMaxModelBytes: `/dev/zero` or a runaway file is refused, not read until memory
  // runs out.
  auto readCapped = [&](std::istream& in, const std::string& shown) -> std::optional<std::string> {
    std::string text;
    char buffer[1 << 16];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
      text.append(buffer, static_cast<size_t>(in.gcount()));
      if (static_cast<int64_t>(text.size()) > kMaxModelBytes) {
        error = fmt::format("cannot read '{}': it is larger than {} bytes (docs/limits.md)", shown, kMaxModelBytes);
        return std::nullopt;
      }
    }
    if (in.bad()) {
      error = fmt::format("cannot read '{}': {}", shown, std::strerror(errno));
      return std::nullopt;
    }
    return text;
  };
  if (path == "-") return readCapped(std::cin, "<stdin>");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    error = fmt::format("cannot read '{}': it is a directory; give a model file", path);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("cannot read '{}': {}", path, std::strerror(errno));
    return std::nullopt;
  }
  return readCapped(in, path);
}

std::string modelStem(const std::string& path) {
  if (path == "-") return "stdin";
  size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

bool isConfigFile(const std::string& path) { return std::filesystem::path(path).extension() == ".json"; }

}  // namespace irc
