#pragma once
// Integers and tuples of them appended straight onto a string, in MindSpore's printed form:
// `(64, 64)`, `(4)`, `()`. Shared by formatIntTuple and the dump printers (dumps/text_append.h),
// which write hundreds of megabytes of them on a 100k-op model.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include <fmt/format.h>

namespace irc::text {

inline void appendInt(std::string& out, int64_t value) {
  fmt::format_int digits(value);
  out.append(digits.data(), digits.size());
}

// (64, 64); (4); () — formatIntTuple's form for any range of integers. Short tuples (shapes,
// strategies) are laid out in a stack buffer and appended once: a dump appends millions, and
// one string append per integer and separator was the printer's largest single cost.
template <typename Ints>
void appendTuple(std::string& out, const Ints& values) {
  constexpr size_t kShort = 8;
  constexpr size_t kIntChars = 20;  // -9223372036854775808
  if (values.size() <= kShort) {
    char buffer[kShort * (kIntChars + 2) + 2];
    char* p = buffer;
    *p++ = '(';
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) {
        *p++ = ',';
        *p++ = ' ';
      }
      fmt::format_int digits(static_cast<int64_t>(values[i]));
      std::memcpy(p, digits.data(), digits.size());
      p += digits.size();
    }
    *p++ = ')';
    out.append(buffer, static_cast<size_t>(p - buffer));
    return;
  }
  out += '(';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out.append(", ", 2);
    appendInt(out, static_cast<int64_t>(values[i]));
  }
  out += ')';
}

// The parts one after another, integers in decimal: concat(op, ".in", 0, ".redistribution_op.", 2).
// For names made once per inserted op (fmt::format costs about 1000 instructions a call; a
// 100k-op model inserts over 100k ops with two names each).
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::string out;
  auto add = [&out](const auto& part) {
    if constexpr (std::is_integral_v<std::decay_t<decltype(part)>>) appendInt(out, static_cast<int64_t>(part));
    else out += std::string_view(part);
  };
  (add(parts), ...);
  return out;
}

}  // namespace irc::text
