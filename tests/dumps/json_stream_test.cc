// dumps/json_stream.h: streamed JSON laid out exactly as nlohmann::json dumps it.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <vector>

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
    js.member("plain"_key, int64_t{1});  // a compile-time checked key, copied unescaped
    js.key("nested"_key);
    js.beginObject();
    js.endObject();
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

TEST_CASE("JsonStream writes doubles as nlohmann does, whole numbers on its fast path included") {
  std::vector<double> numbers = {0.0,
                                 -0.0,
                                 1.0,
                                 -1.0,
                                 4096.0,
                                 2.5,
                                 -0.125,
                                 1e-7,
                                 123456789012345.0,
                                 -999999999999999.0,
                                 1e15,
                                 1e16,
                                 1e20,
                                 9007199254740993.0,
                                 0.1 + 0.2,
                                 std::nan(""),
                                 INFINITY,
                                 -INFINITY};
  for (int i = 0; i < 2000; ++i) numbers.push_back(static_cast<double>(i * 7919) * ((i % 3) ? 1 : -1));
  for (double d : numbers) {
    CAPTURE(d);
    std::ostringstream out;
    {
      JsonStream js(out, -1);
      js.beginArray();
      js.value(d);
      js.endArray();
    }
    CHECK(out.str() == nlohmann::ordered_json::array({d}).dump());
  }
}

TEST_CASE("JsonStream writes int arrays as nlohmann does: short and long, first and later, at every level") {
  std::vector<std::vector<int64_t>> arrays = {
      {}, {0}, {-1, 64}, {INT64_MIN, INT64_MAX, 0, -7, 8, 9, 10, 11}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  for (int indent : {-1, 0, 2}) {
    for (const auto& values : arrays) {
      CAPTURE(indent);
      CAPTURE(values.size());
      std::ostringstream whole;
      {
        JsonStream js(whole, indent);
        js.intArray(values);  // the whole document
      }
      CHECK(whole.str() == nlohmann::ordered_json(values).dump(indent));
      std::ostringstream nested;
      {
        JsonStream js(nested, indent);
        js.beginArray();
        js.intArray(values);  // first element, then after a comma
        js.intArray(values);
        js.beginObject();
        js.member("a", values);  // as a member's value
        js.member("b", values);
        js.endObject();
        js.endArray();
      }
      std::string text = nested.str();
      CHECK(text == nlohmann::ordered_json::parse(text).dump(indent));
      CHECK(nlohmann::ordered_json::parse(text)[2]["b"] == nlohmann::ordered_json(values));
    }
  }
}

}  // namespace irc::test
