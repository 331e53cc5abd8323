#pragma once
// A small FileCheck: CHECK (the next match at or after the cursor), CHECK-NEXT (on the line
// right after the previous match), CHECK-NOT (absent between the previous match and the next).
// Patterns are plain substrings.
#include <string>

namespace irc::test {

// Empty when `text` satisfies the directives (one per line of `directives`), else what failed.
std::string checkLines(const std::string& text, const std::string& directives);

}  // namespace irc::test
