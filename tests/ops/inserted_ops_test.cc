// ops/inserted_ops.h: an inserted op's rank arguments (what dumps and reports of the global
// graph print for a rank) are exactly what materializing the op for that rank gives, and what
// the rank's local graph holds.
#include <doctest/doctest.h>

#include "ops/inserted_ops.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace irc::test {
namespace {

bool sameOperands(const std::vector<Operand>& a, const std::vector<Operand>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].value != b[i].value || a[i].constant != b[i].constant) return false;
  return true;
}

}  // namespace

TEST_CASE("rankArgs are the attrs and operands materializeForRank gives, rank by rank") {
  Compiled c = compileAllRanks(readFile(sourceDir() + "/examples/attention.yaml"));
  REQUIRE(c.errors.empty());
  int withArgs = 0, differingByRank = 0;
  for (OpId id : c.global.order) {
    const Op& op = c.global.op(id);
    if (!hasRankArgs(op)) continue;
    ++withArgs;
    RankArgs first = rankArgs(op, 0);
    for (const auto& [rank, local] : c.locals) {
      CAPTURE(op.name);
      CAPTURE(rank);
      RankArgs args = rankArgs(op, rank);
      Op copy = op;
      materializeForRank(copy, rank);
      CHECK(args.attrs == copy.attrs);
      CHECK(sameOperands(args.operands, copy.operands));
      CHECK(args.attrs == local.op(id).attrs);
      CHECK(sameOperands(args.operands, local.op(id).operands));
      if (!(args.attrs == first.attrs) || !sameOperands(args.operands, first.operands)) ++differingByRank;
    }
  }
  CHECK(withArgs > 0);
  CHECK(differingByRank > 0);  // the groups and bounds do depend on the rank here
}

TEST_CASE("a rank's shapes-only view is its full view less its groups' names: the same bounds and sizes") {
  // RankDetail::Shapes (the memory estimate's and the verifier's view) skips formatting the
  // groups' MindSpore names and rank lists, thousands of ranks a collective at scale; the
  // attributes stay present, empty, and everything else is the full view's.
  Compiled c = compileAllRanks(readFile(sourceDir() + "/examples/attention.yaml"));
  REQUIRE(c.errors.empty());
  int groups = 0;
  for (OpId id : c.global.order) {
    const Op& op = c.global.op(id);
    if (!hasRankArgs(op)) continue;
    for (int64_t rank : {0, 5}) {
      CAPTURE(op.name);
      RankArgs full = rankArgs(op, rank), shapes = rankArgs(op, rank, RankDetail::Shapes);
      CHECK(sameOperands(full.operands, shapes.operands));
      REQUIRE(full.attrs.size() == shapes.attrs.size());
      for (const auto& [key, value] : full.attrs) {
        CAPTURE(key);
        REQUIRE(shapes.attrs.count(key));
        if (key == "group" || key == "group_ranks" || key == "group_back") {
          CHECK(shapes.attrs.at(key) == Attribute(std::string()));
          CHECK(value != Attribute(std::string()));
          ++groups;
        } else {
          CHECK(shapes.attrs.at(key) == value);
        }
      }
    }
  }
  CHECK(groups > 0);
}

TEST_CASE("the global graph's inserted ops carry no rank's arguments; each rank's view derives them") {
  std::string yaml = readFile(sourceDir() + "/examples/attention.yaml");
  Compiled atZero = compileAllRanks(yaml);
  yaml.replace(yaml.find("  device_num: 8\n"), 15, "  device_num: 8\n  global_rank: 5\n");
  Compiled atFive = compileAllRanks(yaml);
  REQUIRE(atZero.errors.empty());
  REQUIRE(atFive.errors.empty());
  REQUIRE(atZero.global.ops.size() == atFive.global.ops.size());
  int withArgs = 0;
  for (OpId id : atFive.global.order) {
    const Op& op = atFive.global.op(id);
    CAPTURE(op.name);
    // The compile's rank leaves no trace in the global graph (it did: rank 5's groups).
    CHECK(op.attrs == atZero.global.op(id).attrs);
    CHECK(sameOperands(op.operands, atZero.global.op(id).operands));
    if (!hasRankArgs(op)) continue;
    ++withArgs;
    CHECK_FALSE(op.attrs.count("group"));
    for (const auto& [rank, local] : atFive.locals) {
      CAPTURE(rank);
      // A rank's view of the global op is what the rank's local graph holds, and the view of
      // the local graph for its own rank shows the local op as it is.
      const OpForRank global(atFive.global, op, rank);
      const OpForRank own(local, local.op(id), rank);
      CHECK(global.attrs() == local.op(id).attrs);
      CHECK(sameOperands(global.operands(), local.op(id).operands));
      CHECK(&own.attrs() == &local.op(id).attrs);
    }
  }
  CHECK(withArgs > 0);
}

}  // namespace irc::test
