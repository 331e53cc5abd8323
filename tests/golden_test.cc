// Golden dump directories: tests/golden/<case>/model.yaml (+ args, optional) and the
// expected/ tree of `irc model.yaml --dump-all [args]`. Regenerate with IRC_UPDATE_GOLDENS=1
// and review the diff; never accept one unread.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "tests/test_util.h"

namespace irc::test {
namespace fs = std::filesystem;

namespace {
std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}
}  // namespace

TEST_CASE("golden dump directories match byte for byte") {
  std::string root = sourceDir() + "/tests/golden";
  bool update = std::getenv("IRC_UPDATE_GOLDENS") && std::string(std::getenv("IRC_UPDATE_GOLDENS")) == "1";
  // Regenerating is a person's act, reviewed as a diff: under CI it would make the test pass by
  // definition.
  if (update && std::getenv("CI"))
    FAIL("IRC_UPDATE_GOLDENS=1 is refused under CI: regenerate the goldens by hand and review the diff");
  std::vector<std::string> cases;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory()) cases.push_back(e.path().filename().string());
  std::sort(cases.begin(), cases.end());
  REQUIRE(!cases.empty());
  for (const std::string& name : cases) {
    CAPTURE(name);
    std::string dir = root + "/" + name;
    TempDir tmp;
    std::vector<std::string> args = {"model.yaml", "--dump-all", "--dump-dir", tmp.path() + "/out", "-q"};
    if (fs::exists(dir + "/args")) {
      auto extra = words(readFile(dir + "/args"));
      args.insert(args.end(), extra.begin(), extra.end());
    }
    RunResult r = runIrc(args, dir);
    REQUIRE(r.exitCode == 0);
    if (update) {
      fs::remove_all(dir + "/expected");
      fs::copy(tmp.path() + "/out", dir + "/expected", fs::copy_options::recursive);
      continue;
    }
    std::vector<std::string> got = listFiles(tmp.path() + "/out"), want = listFiles(dir + "/expected");
    CHECK(got == want);
    for (const auto& f : want) {
      CAPTURE(f);
      CHECK(readFile(tmp.path() + "/out/" + f) == readFile(dir + "/expected/" + f));
    }
  }
}

}  // namespace irc::test
