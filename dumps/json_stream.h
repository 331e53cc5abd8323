#pragma once
// Writes JSON to a stream as it is produced, in exactly nlohmann::json's dump() layout (compact
// with indent < 0, else `indent` spaces a level): the report is written member by member, each
// op's object built and dumped on its own, never the whole graph as one JSON tree.
//
// The text goes through a buffer of its own, handed to the stream in blocks of about 64 KiB and
// whenever the outermost value closes: a report writes millions of leaves, and an ostream
// insertion per character or number (a sentry and a locale each) was most of its time.
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace irc {

// A JSON object key with nothing to escape, made by the literal "name"_key: a key with a quote, a
// backslash or a control character does not compile.
struct PlainKey {
  std::string_view text;
};

consteval PlainKey operator""_key(const char* text, size_t size) {
  for (size_t i = 0; i < size; ++i)
    if (static_cast<unsigned char>(text[i]) < 0x20 || text[i] == '"' || text[i] == '\\')
      throw "a _key literal must need no JSON escaping";
  return PlainKey{std::string_view(text, size)};
}

class JsonStream {
 public:
  JsonStream(std::ostream& out, int indent) : out_(out), indent_(indent) { buffer_.reserve(kBlockBytes + kBlockBytes / 4); }
  ~JsonStream() { flush(); }
  JsonStream(const JsonStream&) = delete;
  JsonStream& operator=(const JsonStream&) = delete;

  void beginObject() { open('{', true); }
  void endObject() { close('}'); }
  void beginArray() { open('[', false); }
  void endArray() { close(']'); }
  // In an object: the key of the next value.
  void key(std::string_view name);
  // A key checked at compile time to need no escaping ("tensor_map"_key): copied as it is. The
  // report writes hundreds of thousands of them.
  void key(PlainKey name) {
    beginMember();
    buffer_ += '"';
    buffer_.append(name.text.data(), name.text.size());
    if (indent_ < 0) buffer_.append("\":", 2);
    else buffer_.append("\": ", 3);
    afterKey_ = true;
  }
  // A whole value: an array element, or the value of the last key.
  void value(const nlohmann::ordered_json& j);
  // Leaves written directly (no JSON object built): the report writes millions of them.
  void value(int64_t v);
  void value(const std::string& s);
  void value(std::nullptr_t);
  // A number as nlohmann writes it (integral ones below 10^15 as "4096.0", the rest by nlohmann).
  void value(double v);
  void intArray(const std::vector<int64_t>& values);
  template <typename Name, typename T>
  void member(const Name& name, const T& v) {
    key(name);
    if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, std::string> || std::is_same_v<T, std::nullptr_t> ||
                  std::is_same_v<T, double>)
      value(v);
    else if constexpr (std::is_same_v<T, std::vector<int64_t>>) intArray(v);
    else value(nlohmann::ordered_json(v));
  }

 private:
  struct Level {
    bool object;
    bool empty = true;
  };
  void open(char bracket, bool object);
  void close(char bracket);
  void beginMember();  // the comma and line break before an array element or an object key
  void newline(size_t depth);
  void writeString(std::string_view s);
  void flush();
  // After each value: hands a full block to the stream.
  void flushIfFull() {
    if (buffer_.size() >= kBlockBytes) flush();
  }

  static constexpr size_t kBlockBytes = size_t{1} << 16;
  std::ostream& out_;
  std::string buffer_;
  int indent_;
  std::vector<Level> stack_;
  bool afterKey_ = false;
};

}  // namespace irc
