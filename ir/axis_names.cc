#include "ir/axis_names.h"

#include <array>

#include <fmt/format.h>

namespace irc {

AxisNames::AxisNames(std::vector<std::string> names) {
  if (!names.empty()) names_ = std::make_shared<const std::vector<std::string>>(std::move(names));
}

AxisNames AxisNames::unnamed(size_t count) {
  // Device matrices have a handful of axes; longer unnamed lists (never seen in practice) are
  // simply made each time.
  constexpr size_t kShared = 16;
  static const std::array<AxisNames, kShared> shared = [] {
    std::array<AxisNames, kShared> lists;
    std::vector<std::string> names;
    for (size_t n = 1; n < kShared; ++n) {
      names.push_back(fmt::format("axis_{}", n - 1));
      lists[n] = AxisNames(names);
    }
    return lists;
  }();
  if (count < kShared) return shared[count];
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(fmt::format("axis_{}", i));
  return AxisNames(std::move(names));
}

const std::vector<std::string>& AxisNames::list() const {
  static const std::vector<std::string> none;
  return names_ ? *names_ : none;
}

void AxisNames::push_back(std::string name) {
  std::vector<std::string> names = list();
  names.push_back(std::move(name));
  names_ = std::make_shared<const std::vector<std::string>>(std::move(names));
}

}  // namespace irc
