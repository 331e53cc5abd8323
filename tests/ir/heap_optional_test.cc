// HeapOptional: std::optional's behaviour (empty, set, reset, compare, convert) with deep copies.
#include <doctest/doctest.h>

#include <string>

#include "ir/heap_optional.h"

namespace irc::test {

TEST_CASE("HeapOptional behaves as std::optional and copies deeply") {
  HeapOptional<std::string> empty;
  CHECK(!empty);
  CHECK(empty == std::nullopt);
  CHECK(empty.value_or("fallback") == "fallback");
  CHECK_THROWS_AS(empty.value(), std::bad_optional_access);

  HeapOptional<std::string> a = std::string("layout");
  HeapOptional<std::string> copy = a;
  *copy += "!";
  CHECK(*a == "layout");  // the copy owns its own value
  CHECK(*copy == "layout!");
  CHECK(!(a == copy));
  copy = a;
  CHECK(a == copy);

  HeapOptional<std::string> moved = std::move(copy);
  CHECK(moved.has_value());
  CHECK(moved->size() == 6);

  std::optional<std::string> plain = a;
  CHECK(plain == std::optional<std::string>("layout"));
  HeapOptional<std::string> fromPlain = std::optional<std::string>();
  CHECK(!fromPlain.has_value());
  fromPlain.emplace(3, 'x');
  CHECK(*fromPlain == "xxx");
  fromPlain = std::nullopt;
  CHECK(!fromPlain);
  a.reset();
  CHECK(a == fromPlain);
}

}  // namespace irc::test
