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
  out_ << nlohmann::json(std::string(name)).dump() << (indent_ < 0 ? ":" : ": ");
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

}  // namespace irc
