// text::appendTuple: the stack-buffer path (up to 8 integers) and the long path write what
// fmt::join would, extreme values included.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/int_text.h"
#include "ir/shape.h"

namespace irc::test {

TEST_CASE("appendTuple writes (a, b, ...) like fmt::join for short and long tuples") {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> cases = {
      {},
      {4},
      {64, 64},
      {-1, 0, 1},
      {lo, hi, lo, hi, lo, hi, lo, hi},
      {lo, hi, lo, hi, lo, hi, lo, hi, 0},
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
  };
  for (const auto& values : cases) {
    std::string expected = fmt::format("({})", fmt::join(values, ", "));
    std::string out = "x";
    text::appendTuple(out, values);
    CHECK(out == "x" + expected);
    CHECK(formatIntTuple(values) == expected);
  }
  std::vector<int> small = {2, 1, 4};  // any integer range
  std::string out;
  text::appendTuple(out, small);
  CHECK(out == "(2, 1, 4)");
}

TEST_CASE("concat writes strings as they are and integers as fmt does") {
  std::string producer = "l0.k";
  size_t operand = 1;
  CHECK(text::concat(producer, ".in", operand, ".redistribution_op.", 0) == "l0.k.in1.redistribution_op.0");
  CHECK(text::concat("forward_op_", std::string_view("mm"), "_", int64_t{-3}) == "forward_op_mm_-3");
  CHECK(text::concat(INT64_MIN, "|", INT64_MAX) == fmt::format("{}|{}", INT64_MIN, INT64_MAX));
  CHECK(text::concat() == "");
}

}  // namespace irc::test
