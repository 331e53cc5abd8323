// dumps/dump_writer.h's StagedFile: the text is written beside the target and appears only on
// commit; an uncommitted one leaves nothing behind.
#include <doctest/doctest.h>

#include "dumps/dump_writer.h"
#include "tests/test_util.h"

namespace irc::test {

TEST_CASE("a staged file appears only when committed, and an uncommitted one leaves nothing") {
  TempDir tmp;
  std::string path = tmp.path() + "/sub/out.json";
  {
    StagedFile staged(path, [](std::ostream& out) { out << "first"; });
    CHECK(listFiles(tmp.path() + "/sub").size() == 1);  // the temporary, under another name
    CHECK(listFiles(tmp.path() + "/sub")[0] != "out.json");
  }
  CHECK(listFiles(tmp.path() + "/sub").empty());
  writeFile(path, "old");
  StagedFile staged(path, [](std::ostream& out) { out << std::string(3 << 20, 'x'); });  // past one write block
  CHECK(readFile(path) == "old");
  CHECK(!staged.commit());
  CHECK(readFile(path) == std::string(3 << 20, 'x'));
  CHECK(listFiles(tmp.path() + "/sub") == std::vector<std::string>{"out.json"});
  // A directory in the way is the write's error, reported by commit.
  StagedFile blocked(tmp.path() + "/sub", [](std::ostream& out) { out << "x"; });
  auto error = blocked.commit();
  REQUIRE(error);
  CHECK(error->find("Is a directory") != std::string::npos);
}

}  // namespace irc::test
