#pragma once
// What a name (of a model, value, op or mesh axis) may contain. Names are printed into dumps,
// reports and diagnostics verbatim, so they must be valid UTF-8 (JSON needs it) and free of
// control characters (a newline could forge a dump line, ESC could drive a terminal).
#include <optional>
#include <string>
#include <string_view>

namespace irc {

// Why `name` is not allowed (e.g. "contains a control character (U+000A) at byte 3"), or
// nullopt when it is fine.
std::optional<std::string> nameProblem(std::string_view name);

// `name` with every byte that is not printable ASCII or part of valid UTF-8 written as \xNN
// (for messages that must show a rejected name without printing it raw).
std::string escapedName(std::string_view name);

}  // namespace irc
