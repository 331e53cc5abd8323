#include "ir/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/int_text.h"

namespace irc {

int64_t numElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string formatIntTuple(const std::vector<int64_t>& values) {
  std::string text;
  text::appendTuple(text, values);
  return text;
}

std::string formatShape(const Shape& shape) { return formatIntTuple(shape); }

std::string formatIntList(const std::vector<int64_t>& values) { return fmt::format("[{}]", fmt::join(values, ", ")); }

}  // namespace irc
