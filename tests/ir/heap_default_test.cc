// ir/heap_default.h: reads of an unwritten value see a default one without making it; writes
// make it; copies are deep. The op's parallel state relies on all three.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/heap_default.h"

namespace irc::test {

TEST_CASE("HeapDefault reads a default value until written, and copies deeply") {
  HeapDefault<std::vector<std::string>> box;
  const auto& readOnly = box;
  CHECK(readOnly->empty());
  CHECK_FALSE(box.written());  // a const read makes nothing

  box->push_back("a");  // a write makes it
  CHECK(box.written());
  CHECK(*readOnly == std::vector<std::string>{"a"});

  HeapDefault<std::vector<std::string>> copy = box;
  copy->push_back("b");
  CHECK(box->size() == 1);
  CHECK(copy->size() == 2);

  HeapDefault<std::vector<std::string>> moved = std::move(copy);
  CHECK(moved->size() == 2);
  box = std::vector<std::string>{"x", "y", "z"};
  CHECK(box->size() == 3);
}

TEST_CASE("an inserted op's parallel state is never made by reading it") {
  Op op;
  const Op& view = op;
  CHECK_FALSE(view.parallel->hasSharding);
  CHECK(view.parallel->inputLayouts.empty());
  CHECK_FALSE(op.parallel.written());
  Op copy = op;
  CHECK_FALSE(copy.parallel.written());
  // Half the size it had with the state inline (896 bytes): ops are moved on every growth.
  CHECK(sizeof(Op) < 600);
}

}  // namespace irc::test
