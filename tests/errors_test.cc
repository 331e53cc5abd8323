// Every error class of spec/model-format.md: each case in tests/errors/ is a model
// (NAME.yaml) with the exact diagnostics irc must print (NAME.stderr). The model must be
// rejected with status 1 and no dump written.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "tests/test_util.h"

namespace irc::test {
namespace fs = std::filesystem;

TEST_CASE("every malformed model in tests/errors gets its exact diagnostics and status 1") {
  std::string dir = sourceDir() + "/tests/errors";
  std::vector<std::string> cases;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") cases.push_back(e.path().stem().string());
  std::sort(cases.begin(), cases.end());
  REQUIRE(cases.size() >= 15);
  for (const std::string& name : cases) {
    CAPTURE(name);
    TempDir tmp;
    RunResult r = runIrc({name + ".yaml", "--dump-all", "--dump-dir", tmp.path() + "/dumps"}, dir);
    CHECK(r.exitCode == 1);
    CHECK(r.err == readFile(dir + "/" + name + ".stderr"));
    CHECK(r.out.empty());
    CHECK(listFiles(tmp.path()).empty());
  }
}

}  // namespace irc::test
