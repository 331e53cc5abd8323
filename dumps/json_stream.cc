#include "dumps/json_stream.h"

#include <array>
#include <cmath>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace irc {

void JsonStream::flush() {
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

void JsonStream::newline(size_t depth) {
  if (indent_ < 0) return;
  buffer_ += '\n';
  buffer_.append(depth * static_cast<size_t>(indent_), ' ');
}

void JsonStream::beginMember() {
  if (afterKey_) {  // the value of a key: it follows on the key's line
    afterKey_ = false;
    return;
  }
  if (stack_.empty()) return;
  if (!stack_.back().empty) buffer_ += ',';
  stack_.back().empty = false;
  newline(stack_.size());
}

void JsonStream::open(char bracket, bool object) {
  beginMember();
  buffer_ += bracket;
  stack_.push_back({object});
}

void JsonStream::close(char bracket) {
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline(stack_.size());
  buffer_ += bracket;
  if (stack_.empty()) flush();  // the outermost value is whole: the stream has all of it
  else flushIfFull();
}

void JsonStream::key(std::string_view name) {
  beginMember();
  writeString(name);
  if (indent_ < 0) buffer_ += ':';
  else buffer_.append(": ", 2);
  afterKey_ = true;
}

void JsonStream::value(const nlohmann::ordered_json& j) {
  beginMember();
  std::string text = j.dump(indent_);
  if (text.find('\n') == std::string::npos) {
    buffer_ += text;
    flushIfFull();
    return;
  }
  // nlohmann lays the value out from column 0: indent its inner lines to this depth.
  std::string pad(stack_.size() * static_cast<size_t>(indent_), ' ');
  size_t start = 0;
  while (true) {
    size_t nl = text.find('\n', start);
    buffer_.append(text, start, (nl == std::string::npos ? text.size() : nl) - start);
    if (nl == std::string::npos) break;
    buffer_ += '\n';
    buffer_ += pad;
    start = nl + 1;
  }
  flushIfFull();
}

void JsonStream::value(int64_t v) {
  beginMember();
  fmt::format_int digits(v);
  buffer_.append(digits.data(), digits.size());
}

void JsonStream::value(double v) {
  // Costs are mostly whole numbers: nlohmann writes those as the integer and ".0" while its
  // shortest form has at most 15 digits. Anything else (fractions, large, -0, inf, nan) is
  // written by nlohmann itself.
  if (v == std::floor(v) && std::fabs(v) < 1e15 && !(v == 0 && std::signbit(v))) {
    beginMember();
    fmt::format_int digits(static_cast<int64_t>(v));
    buffer_.append(digits.data(), digits.size());
    buffer_ += ".0";
    return;
  }
  value(nlohmann::ordered_json(v));
}

void JsonStream::value(std::nullptr_t) {
  beginMember();
  buffer_ += "null";
}

// nlohmann's escaping (ensure_ascii off): quote, backslash and control characters; UTF-8 is
// written as it is (names are checked to be valid UTF-8 when read).
namespace {

// The characters JSON strings escape: quote, backslash and the controls below 0x20.
constexpr std::array<bool, 256> kEscaped = [] {
  std::array<bool, 256> escaped{};
  for (int c = 0; c < 0x20; ++c) escaped[c] = true;
  escaped['"'] = escaped['\\'] = true;
  return escaped;
}();

}  // namespace

void JsonStream::writeString(std::string_view s) {
  buffer_ += '"';
  size_t run = 0;  // start of the characters not yet written
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char u = static_cast<unsigned char>(s[i]);
    if (!kEscaped[u]) continue;
    buffer_.append(s.data() + run, i - run);
    run = i + 1;
    switch (u) {
      case '"': buffer_.append("\\\"", 2); break;
      case '\\': buffer_.append("\\\\", 2); break;
      case '\b': buffer_.append("\\b", 2); break;
      case '\f': buffer_.append("\\f", 2); break;
      case '\n': buffer_.append("\\n", 2); break;
      case '\r': buffer_.append("\\r", 2); break;
      case '\t': buffer_.append("\\t", 2); break;
      default: {
        static const char* hex = "0123456789abcdef";
        const char escape[] = {'\\', 'u', '0', '0', hex[u >> 4], hex[u & 15]};
        buffer_.append(escape, sizeof escape);
      }
    }
  }
  buffer_.append(s.data() + run, s.size() - run);
  buffer_ += '"';
}

void JsonStream::value(const std::string& s) {
  beginMember();
  writeString(s);
}

void JsonStream::intArray(const std::vector<int64_t>& values) {
  // Compact short arrays (shapes, slices, groups: millions in a 100k-op report) are laid out
  // in a stack buffer and appended once, as element-by-element writing would give them.
  constexpr size_t kShort = 8;
  constexpr size_t kIntChars = 20;  // -9223372036854775808
  if (indent_ >= 0 || values.size() > kShort) {
    beginArray();
    for (int64_t v : values) value(v);
    endArray();
    return;
  }
  beginMember();
  char buffer[kShort * (kIntChars + 1) + 2];
  char* p = buffer;
  *p++ = '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) *p++ = ',';
    fmt::format_int digits(values[i]);
    std::memcpy(p, digits.data(), digits.size());
    p += digits.size();
  }
  *p++ = ']';
  buffer_.append(buffer, static_cast<size_t>(p - buffer));
  if (stack_.empty()) flush();  // the array is the whole document
  else flushIfFull();
}

}  // namespace irc
