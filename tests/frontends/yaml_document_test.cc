// frontends/document/yaml_document.h: the event-built tree must agree with yaml-cpp's own node tree on
// every node's kind, scalar and mark (diagnostics point where they did), and stop yaml-cpp's
// runaway parses.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>

#include <yaml-cpp/yaml.h>

#include "frontends/document/yaml_document.h"
#include "tests/test_util.h"

namespace irc::test {
namespace {

// Walks both trees in step; returns the nodes compared.
size_t compareTrees(const YAML::Node& want, const YamlNode& got) {
  CAPTURE(want.Mark().line);
  CAPTURE(want.Mark().column);
  REQUIRE(got.IsDefined());
  CHECK(got.Mark().line == want.Mark().line);
  CHECK(got.Mark().column == want.Mark().column);
  CHECK(got.IsNull() == want.IsNull());
  CHECK(got.IsScalar() == want.IsScalar());
  CHECK(got.IsSequence() == want.IsSequence());
  CHECK(got.IsMap() == want.IsMap());
  size_t compared = 1;
  if (want.IsScalar()) CHECK(got.Scalar() == want.Scalar());
  if (want.IsSequence()) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) compared += compareTrees(want[i], got[i]);
  }
  if (want.IsMap()) {
    REQUIRE(got.size() == want.size());
    auto g = got.begin();
    for (auto w = want.begin(); w != want.end(); ++w, ++g) {
      compared += compareTrees(w->first, g->first);
      compared += compareTrees(w->second, g->second);
    }
  }
  return compared;
}

}  // namespace

TEST_CASE("the event-built YAML tree matches yaml-cpp's node tree on every example and test model") {
  size_t files = 0, nodes = 0;
  for (const char* dir : {"/examples", "/tests/models", "/tests/errors"})
    for (const auto& entry : std::filesystem::directory_iterator(sourceDir() + dir)) {
      if (entry.path().extension() != ".yaml") continue;
      std::string text = readFile(entry.path().string());
      CAPTURE(entry.path().string());
      std::vector<YAML::Node> want;
      try {
        want = YAML::LoadAll(text);
      } catch (const YAML::Exception&) {
        CHECK_THROWS_AS(YamlDocuments{text}, YAML::Exception);  // the same syntax errors
        continue;
      }
      YamlDocuments got(text);
      REQUIRE(got.size() == want.size());
      for (size_t d = 0; d < want.size(); ++d) nodes += compareTrees(want[d], got.root(d));
      ++files;
    }
  MESSAGE(files << " files, " << nodes << " nodes compared");
  CHECK(files > 30);
}

TEST_CASE("nested collections keep their children, in order, around collections that close inside them") {
  // The children of every collection are stored contiguously once it closes; a collection that
  // opens and closes among its parent's children must not split or reorder the parent's.
  const std::string text =
      "a: [1, [2, [3, {x: 4, y: [5, 6]}], 7], 8]\n"
      "b:\n  - {p: [], q: {}}\n  - - 9\n    - {r: [10, 11], s: 12}\n  - 13\n"
      "c: &k {m: [14]}\nd: [*k, *k, 15]\n";
  std::vector<YAML::Node> want = YAML::LoadAll(text);
  YamlDocuments got(text);
  REQUIRE(got.size() == 1);
  CHECK(compareTrees(want[0], got.root(0)) == 50);  // every node, keys and each alias's nodes included
  YamlNode d = got.root(0).find("d");
  REQUIRE(d.size() == 3);
  CHECK(d[0].find("m")[0].Scalar() == "14");
  CHECK(d[2].Scalar() == "15");
  CHECK(got.root(0).find("b")[0].find("p").size() == 0);
}

TEST_CASE("anchors and aliases share the anchored node; a missing key is an undefined node") {
  YamlDocuments doc("a: &x [1, 2]\nb: *x\nc: ~\nd: 'null'\n");
  YamlNode root = doc.root(0);
  REQUIRE(root.IsMap());
  REQUIRE(root.size() == 4);
  auto it = root.begin();
  YamlNode a = it->second;
  ++it;
  YamlNode b = it->second;
  CHECK(b.IsSequence());
  CHECK(b.size() == 2);
  CHECK(b[1].Scalar() == "2");
  CHECK(b.Mark().line == a.Mark().line);  // the same node
  ++it;
  CHECK(it->second.IsNull());
  ++it;
  CHECK(it->second.IsScalar());  // a quoted 'null' is a string
  CHECK(!b[5].IsDefined());
  CHECK(!YamlNode().IsDefined());
}

TEST_CASE("find gives a map's value under a scalar key, the first of duplicates; undefined otherwise") {
  YamlDocuments doc("a: 1\nb: ~\n[k]: 2\na: 3\nseq: [a, b]\n");
  YamlNode root = doc.root(0);
  CHECK(root.find("a").Scalar() == "1");
  CHECK(root.find("b").IsDefined());  // a null value is there
  CHECK(root.find("b").IsNull());
  CHECK(!root.find("k").IsDefined());  // the key [k] is no scalar
  CHECK(!root.find("c").IsDefined());
  CHECK(!root.find("seq").find("a").IsDefined());  // not a map
  CHECK(!YamlNode().find("a").IsDefined());
}

TEST_CASE("a flow collection yaml-cpp would loop on forever is stopped at its place") {
  // Found by the fuzzer: yaml-cpp 0.7 emits events forever on this input.
  std::string text = readFile(sourceDir() + "/tests/fuzz_corpus/yaml_cpp_runaway_flow.yaml");
  try {
    YamlDocuments doc(text);
    FAIL("the parse ended");
  } catch (const YamlRunaway& r) {
    CHECK(r.mark.line == 1);  // line 2, 0-based: where it starts going round
  }
}

}  // namespace irc::test
