#include "ir/suggest.h"

#include <algorithm>

#include <fmt/format.h>

namespace irc {

size_t editDistance(std::string_view a, std::string_view b) {
  // Classic two-row Levenshtein distance; names are short.
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> closestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  size_t limit = std::max<size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  size_t bestDistance = limit + 1;
  for (const std::string& c : candidates) {
    size_t d = editDistance(word, c);
    if (d < bestDistance) {  // strict: the first of equally close candidates wins
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

std::string didYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  auto match = closestMatch(word, candidates);
  return match ? fmt::format("; did you mean '{}'?", *match) : std::string();
}

std::string joinNames(const std::vector<std::string>& names) { return fmt::format("{}", fmt::join(names, ", ")); }

}  // namespace irc
