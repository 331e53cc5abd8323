#include <doctest/doctest.h>

#include "ir/diagnostics.h"
#include "ir/suggest.h"

namespace irc::test {

TEST_CASE("a diagnostic renders file:line:col, the source line and a caret under the column") {
  DiagnosticEngine d("m.yaml", "a: 1\n\tb: two\n");
  d.error({2, 5}, "b must be an integer; got 'two'");
  d.note({1, 1}, "see here");
  CHECK(d.renderToString() ==
        "m.yaml:2:5: error: b must be an integer; got 'two'\n\tb: two\n\t   ^\n"
        "m.yaml:1:1: note: see here\na: 1\n^\n");
}

TEST_CASE("errors beyond the cap are counted, not shown") {
  DiagnosticEngine d("m.yaml", "x\n", 2);
  for (int i = 0; i < 5; ++i) d.error({}, "e");
  CHECK(d.capReached());
  CHECK(d.renderToString() == "m.yaml: error: e\nm.yaml: error: e\nm.yaml: too many errors (3 more not shown); stopping\n");
}

TEST_CASE("did you mean picks the closest name within reach") {
  CHECK(closestMatch("MatMull", {"MatMul", "BatchMatMul"}) == std::optional<std::string>("MatMul"));
  CHECK(!closestMatch("Convolution", {"MatMul", "Add"}));
  CHECK(didYouMean("device_nun", {"device_num", "global_rank"}) == "; did you mean 'device_num'?");
}

}  // namespace irc::test

namespace irc::test {
TEST_CASE("a transposition is one edit") {
  CHECK(editDistance("prase", "parse") == 1);
  CHECK(editDistance("kitten", "sitting") == 3);
}
}  // namespace irc::test
