// A dump's file name, written (dumpFileName) and read back (parseDumpFileName): one place for
// MindSpore's `<pass>_XXXX.ir` form, which irc diff read by character position before.
#include <doctest/doctest.h>

#include "dumps/dump_writer.h"

namespace irc::test {

TEST_CASE("dump file names: written and parsed back, and what is not one") {
  for (auto [name, position] : std::vector<std::pair<std::string, int>>{
           {"parse", 0}, {"step_parallel_begin", 1}, {"validate", 4}, {"tensor_layout", 123}, {"a_b_0001", 9999}}) {
    CAPTURE(name);
    std::optional<DumpFileName> parsed = parseDumpFileName(dumpFileName(name, position));
    REQUIRE(parsed);
    CHECK(parsed->dumpName == name);
    CHECK(parsed->position == position);
  }
  for (const char* other : {"validate.ir", "validate_12.ir", "validate_00x4.ir", "_0004.ir", "validate_0004.dot",
                            "validate_0004.failed.ir", "validate-0004.ir", ""})
    CHECK_FALSE(parseDumpFileName(other));
}

}  // namespace irc::test
