// ir/inserted_ops.h: an inserted op's rank arguments (what dumps and reports of the global
// graph print for a rank) are exactly what materializing the op for that rank gives, and what
// the rank's local graph holds.
#include <doctest/doctest.h>

#include "ir/inserted_ops.h"
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

TEST_CASE("the global graph's inserted ops carry the compile's rank; other ranks derive theirs") {
  std::string yaml = readFile(sourceDir() + "/examples/attention.yaml");
  yaml.replace(yaml.find("  device_num: 8\n"), 15, "  device_num: 8\n  global_rank: 5\n");
  Compiled c = compileAllRanks(yaml);
  REQUIRE(c.errors.empty());
  CHECK(c.global.insertedOpsRank == 5);
  int withArgs = 0;
  for (OpId id : c.global.order) {
    const Op& op = c.global.op(id);
    if (!hasRankArgs(op)) continue;
    ++withArgs;
    CAPTURE(op.name);
    CHECK_FALSE(needsRankArgs(c.global, op, 5));
    CHECK(needsRankArgs(c.global, op, 0));
    // What the global graph holds is rank 5's: the same as deriving them afresh.
    RankArgs own = rankArgs(op, 5);
    CHECK(own.attrs == op.attrs);
    CHECK(sameOperands(own.operands, op.operands));
    // Each local graph carries its own rank's, whether shape slicing kept them (rank 5) or
    // derived them.
    for (const auto& [rank, local] : c.locals) {
      CAPTURE(rank);
      CHECK(local.insertedOpsRank == rank);
      CHECK(local.op(id).attrs == rankArgs(op, rank).attrs);
    }
  }
  CHECK(withArgs > 0);
}

}  // namespace irc::test
