// dumps/json_stream.h: streamed JSON laid out exactly as nlohmann::json dumps it.
#include <doctest/doctest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "dumps/json_stream.h"

namespace irc::test {

TEST_CASE("JsonStream writes nlohmann's layout: nesting, empty containers, escapes, every indent") {
  for (int indent : {-1, 0, 1, 4}) {
    CAPTURE(indent);
    std::ostringstream out;
    JsonStream js(out, indent);
    js.beginObject();
    js.member("name", std::string("a \"quoted\"\nname"));
    js.key("empty");
    js.beginArray();
    js.endArray();
    js.key("list");
    js.beginArray();
    js.value(nlohmann::ordered_json{{"x", 1}, {"y", nlohmann::ordered_json::array({1, 2})}});
    js.value(nlohmann::ordered_json::object());
    js.value(2.5);
    js.endArray();
    js.key("inner");
    js.beginObject();
    js.endObject();
    js.member("n", nullptr);
    // The leaves written without nlohmann: escapes, UTF-8, negative numbers, arrays.
    js.member("escaped", std::string("q\" b\\ t\t c\x01 \xc3\xa9 \x7f"));
    js.member("count", int64_t{-42});
    js.member("ints", std::vector<int64_t>{3, -1, 0});
    js.member("none", std::vector<int64_t>{});
    js.key("weird \"key\"");
    js.value(std::string());
    js.endObject();
    std::string text = out.str();
    CHECK(text == nlohmann::ordered_json::parse(text).dump(indent));
  }
}

}  // namespace irc::test
