#include "ir/suggest.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace irc {

size_t editDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance: Levenshtein plus adjacent transpositions, the most
  // common typo ("prase" for "parse"). Names are short, so the full table is fine.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::optional<std::string> closestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  // The same word in other case ("Relu" for "ReLU") is the likeliest slip of all.
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (const std::string& c : candidates)
    if (c != word && lower(c) == lower(word)) return c;
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

std::vector<std::string> splitNames(const std::string& text, char separator) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t at = text.find(separator, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string joinNames(const std::vector<std::string>& names) { return fmt::format("{}", fmt::join(names, ", ")); }

}  // namespace irc
