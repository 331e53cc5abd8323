// Malformed models never crash irc: mutated copies of the examples go through the frontend and
// the whole pipeline; each is either compiled or rejected with located diagnostics — never an
// exception, an assertion or an internal error.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>

#include "frontends/yaml/yaml_frontend.h"
#include "passes/pipeline/compile.h"
#include "search/operator_search.h"
#include "tests/test_util.h"

namespace irc::test {
namespace fs = std::filesystem;

TEST_CASE("mutated models are compiled or rejected with diagnostics, never crash") {
  std::vector<std::string> sources;
  for (const auto& dir : {sourceDir() + "/examples", sourceDir() + "/tests/models"})
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".yaml") sources.push_back(readFile(e.path().string()));
  std::sort(sources.begin(), sources.end());
  const std::vector<std::string> tokens = {"[",
                                           "]",
                                           "{",
                                           "}",
                                           ":",
                                           ",",
                                           "-1",
                                           "0",
                                           "3",
                                           "64",
                                           "None",
                                           "dp",
                                           "S(0)",
                                           "float32",
                                           "int32",
                                           "[[2, 1], [1, 4]]",
                                           "Reshape",
                                           "MatMul",
                                           "x",
                                           "\"",
                                           "'",
                                           "&a",
                                           "*a",
                                           "!!int",
                                           "\n",
                                           "  ",
                                           "null",
                                           "1e9",
                                           "99999999999999999999"};
  std::mt19937 rng(11);
  int compiled = 0, rejected = 0;
  for (int i = 0; i < 400; ++i) {
    std::string s = sources[rng() % sources.size()];
    for (int m = 0, n = 1 + static_cast<int>(rng() % 4); m < n; ++m) {
      size_t pos = rng() % s.size();
      if (rng() % 2) s.erase(pos, 1 + rng() % 8);
      else s.insert(pos, tokens[rng() % tokens.size()]);
    }
    CAPTURE(s);
    DiagnosticEngine diags("m.yaml", s);
    try {
      auto g = loadModel(s, diags, {"m"});
      if (!g) {
        ++rejected;
        CHECK(diags.hasErrors());
        CHECK(diags.renderToString().find("m.yaml") == 0);
        continue;
      }
      PassContext context{diags};
      if (compileWithSearch(g->graph, optionsFromModel(g->parallel), context) == RunOutcome::Rejected) {
        ++rejected;
        CHECK(diags.hasErrors());
      } else {
        ++compiled;
      }
    } catch (const std::exception& e) {
      FAIL("threw: " << e.what());
    }
  }
  MESSAGE(compiled << " compiled, " << rejected << " rejected");
  CHECK(rejected > 100);
}

}  // namespace irc::test
