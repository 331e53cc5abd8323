#pragma once
// Memory sizes as users write and read them: "16GiB", "80GB", "1.5e9"; "0.93 GiB".
#include <optional>
#include <string>
#include <string_view>

namespace irc {

// A byte count of at least 1 with an optional unit: B, KiB, MiB, GiB, TiB (powers of 1024), or
// KB, MB, GB, TB read as the same (JEDEC's units of memory: a GPU's "80 GB" is 80 GiB, and so
// MindSpore reads max_device_memory); a decimal size is a plain number (80e9). Rounded to whole
// bytes; nullopt with `error` set when it is none.
std::optional<double> parseByteSize(std::string_view text, std::string& error);
// Bytes in the largest binary unit that keeps the figure at least 1: "3.81 GiB", "12.0 MiB", "512 B".
std::string formatBytes(double bytes);

}  // namespace irc
