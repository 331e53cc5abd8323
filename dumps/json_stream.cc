#include "dumps/json_stream.h"

#include <string>

namespace irc {

void JsonStream::newline(size_t depth) {
  if (indent_ < 0) return;
  out_ << '\n';
  for (size_t i = 0; i < depth * static_cast<size_t>(indent_); ++i) out_ << ' ';
}

void JsonStream::beginMember() {
  if (afterKey_) {  // the value of a key: it follows on the key's line
    afterKey_ = false;
    return;
  }
  if (stack_.empty()) return;
  if (!stack_.back().empty) out_ << ',';
  stack_.back().empty = false;
  newline(stack_.size());
}

void JsonStream::open(char bracket, bool object) {
  beginMember();
  out_ << bracket;
  stack_.push_back({object});
}

void JsonStream::close(char bracket) {
  bool empty = stack_.back().empty;
  stack_.pop_back();
  if (!empty) newline(stack_.size());
  out_ << bracket;
}

void JsonStream::key(std::string_view name) {
  beginMember();
  writeString(name);
  out_ << (indent_ < 0 ? ":" : ": ");
  afterKey_ = true;
}

void JsonStream::value(const nlohmann::ordered_json& j) {
  beginMember();
  if (indent_ < 0) {
    out_ << j;  // compact: nlohmann writes straight to the stream
    return;
  }
  std::string text = j.dump(indent_);
  if (text.find('\n') == std::string::npos) {
    out_ << text;
    return;
  }
  // nlohmann lays the value out from column 0: indent its inner lines to this depth.
  std::string pad(stack_.size() * static_cast<size_t>(indent_), ' ');
  size_t start = 0;
  while (true) {
    size_t nl = text.find('\n', start);
    out_.write(text.data() + start, static_cast<std::streamsize>((nl == std::string::npos ? text.size() : nl) - start));
    if (nl == std::string::npos) break;
    out_ << '\n' << pad;
    start = nl + 1;
  }
}

void JsonStream::value(int64_t v) {
  beginMember();
  out_ << v;
}

void JsonStream::value(std::nullptr_t) {
  beginMember();
  out_ << "null";
}

// nlohmann's escaping (ensure_ascii off): quote, backslash and control characters; UTF-8 is
// written as it is (names are checked to be valid UTF-8 when read).
void JsonStream::writeString(std::string_view s) {
  out_ << '"';
  size_t run = 0;  // start of the characters not yet written
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char u = static_cast<unsigned char>(s[i]);
    if (u >= 0x20 && u != '"' && u != '\\') continue;
    out_.write(s.data() + run, static_cast<std::streamsize>(i - run));
    run = i + 1;
    switch (u) {
      case '"': out_ << "\\\""; break;
      case '\\': out_ << "\\\\"; break;
      case '\b': out_ << "\\b"; break;
      case '\f': out_ << "\\f"; break;
      case '\n': out_ << "\\n"; break;
      case '\r': out_ << "\\r"; break;
      case '\t': out_ << "\\t"; break;
      default: {
        static const char* hex = "0123456789abcdef";
        out_ << "\\u00" << hex[u >> 4] << hex[u & 15];
      }
    }
  }
  out_.write(s.data() + run, static_cast<std::streamsize>(s.size() - run));
  out_ << '"';
}

void JsonStream::value(const std::string& s) {
  beginMember();
  writeString(s);
}

void JsonStream::intArray(const std::vector<int64_t>& values) {
  beginArray();
  for (int64_t v : values) value(v);
  endArray();
}

}  // namespace irc
