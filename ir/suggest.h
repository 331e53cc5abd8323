#pragma once
// "Did you mean" for unknown names (keys, op types, value names, flags, passes).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace irc {

size_t editDistance(std::string_view a, std::string_view b);

// The closest candidate within a small edit distance (scaled to the word's length), or none.
std::optional<std::string> closestMatch(std::string_view word, const std::vector<std::string>& candidates);

// "; did you mean 'X'?" or "".
std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates);

// "a, b, c" — for "valid: ..." lists.
std::string joinNames(const std::vector<std::string>& names);
// "a,b,,c" split at every `separator`, empty parts kept: the inverse of joining with it.
std::vector<std::string> splitNames(const std::string& text, char separator = ',');

}  // namespace irc
