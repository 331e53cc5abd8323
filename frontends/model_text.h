#pragma once
// A model file's text and what its name says: read once, capped (docs/limits.md), by every
// frontend that reads a file (the YAML plan's graph file too) and by the one load above them.
#include <optional>
#include <string>

namespace irc {

// The file's text ("-" reads stdin), at most kMaxModelBytes; nullopt with `error` set when it
// cannot be read.
std::optional<std::string> readModelText(const std::string& path, std::string& error);
std::string modelStem(const std::string& path);  // "examples/ffn.yaml" -> "ffn"; "-" -> "stdin"
// A Hugging Face config.json (docs/config-json.md): named .json.
bool isConfigFile(const std::string& path);

}  // namespace irc
