// OpFamilyRules::evaluateOnGroup: the collectives' semantics over one group, which `irc
// verify`'s lockstep run (verify/spmd_simulator.h) takes from the ops' families. Expected values
// worked out by hand from MindSpore's definitions.
#include <doctest/doctest.h>

#include "ops/op_defs.h"
#include "ops/op_family.h"

namespace irc::test {
namespace {

std::vector<SharedValue> onGroup(const char* type, RedistStep step, const std::vector<TensorValue>& members) {
  std::vector<const TensorValue*> in;
  for (const TensorValue& m : members) in.push_back(&m);
  return rulesOf(*findOpDef(type)).evaluateOnGroup(step, in);
}

RedistStep step(RedistStep::Kind kind, ReduceOp op = ReduceOp::Sum, int dim = -1, int concatDim = -1) {
  RedistStep s;
  s.kind = kind;
  s.reduceOp = op;
  s.dim = dim;
  s.concatDim = concatDim;
  return s;
}

}  // namespace

TEST_CASE("collectives over one group of two: AllReduce, ReduceScatter, AllGather, AlltoAll") {
  // Member 0 holds [[1, 2], [3, 4]], member 1 [[10, 20], [30, 40]].
  const std::vector<TensorValue> members = {{{2, 2}, {1, 2, 3, 4}}, {{2, 2}, {10, 20, 30, 40}}};

  auto sum = onGroup("AllReduce", step(RedistStep::Kind::AllReduce), members);
  REQUIRE(sum.size() == 2);
  CHECK(sum[0]->data == std::vector<double>{11, 22, 33, 44});
  CHECK(sum[0] == sum[1]);  // one value every member shares
  auto max = onGroup("AllReduce", step(RedistStep::Kind::AllReduce, ReduceOp::Max), members);
  CHECK(max[0]->data == std::vector<double>{10, 20, 30, 40});

  // The sum's dim 0 in blocks: member 0 row 0, member 1 row 1.
  auto scattered = onGroup("ReduceScatter", step(RedistStep::Kind::ReduceScatter), members);
  REQUIRE(scattered.size() == 2);
  CHECK(scattered[0]->shape == Shape{1, 2});
  CHECK(scattered[0]->data == std::vector<double>{11, 22});
  CHECK(scattered[1]->data == std::vector<double>{33, 44});

  // Concatenated on dim 0, the same for both.
  auto gathered = onGroup("AllGather", step(RedistStep::Kind::Gather, ReduceOp::Sum, 0), members);
  CHECK(gathered[0]->shape == Shape{4, 2});
  CHECK(gathered[0]->data == std::vector<double>{1, 2, 3, 4, 10, 20, 30, 40});
  CHECK(gathered[0] == gathered[1]);

  // Split on dim 1, concatenated on dim 0: member i receives column i of every member.
  auto moved = onGroup("AlltoAll", step(RedistStep::Kind::AlltoAll, ReduceOp::Sum, 1, 0), members);
  CHECK(moved[0]->shape == Shape{4, 1});
  CHECK(moved[0]->data == std::vector<double>{1, 3, 10, 30});
  CHECK(moved[1]->data == std::vector<double>{2, 4, 20, 40});
}

TEST_CASE("how ops run on every rank: collectives by group, a Receive from its Send, the rest alone") {
  auto runsAs = [](const char* type) { return rulesOf(*findOpDef(type)).runsAs(*findOpDef(type)); };
  for (const char* type : {"AllReduce", "AllGather", "ReduceScatter", "AlltoAll"}) CHECK(runsAs(type) == RunsAs::Collective);
  CHECK(runsAs("Receive") == RunsAs::Receive);
  for (const char* type : {"_MirrorOperator", "StridedSlice", "Send", "MatMul", "Add"}) CHECK(runsAs(type) == RunsAs::EachRank);
}

}  // namespace irc::test
