// ops/collective.h: the collectives' one home. Ring traffic as NCCL accounts it (its
// PERFORMANCE.md bus bandwidth: an AllReduce moves 2 (n - 1) / n of its buffer per rank, an
// AllGather and a ReduceScatter (n - 1) / n of the whole, an AlltoAll the same), worked out by hand.
#include <doctest/doctest.h>

#include "ops/collective.h"
#include "tests/approx.h"

namespace irc::test {
namespace {

RedistStep stepOver(RedistStep::Kind kind, int64_t ranks, Shape localBefore) {
  RedistStep s;
  s.kind = kind;
  s.mesh = DeviceMatrix::unnamed({ranks});
  s.axes = {0};
  s.localBefore = std::move(localBefore);
  return s;
}

}  // namespace

TEST_CASE("collectives' home: names, types and families name the same kinds") {
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                              CollectiveKind::AlltoAll, CollectiveKind::PointToPoint}) {
    REQUIRE(collectiveOfType(collectiveName(kind)) == kind);
    const OpDef* def = findOpDef(collectiveName(kind));
    REQUIRE(def != nullptr);
    CHECK(collectiveOfFamily(def->family) == kind);
  }
  for (const char* other : {"StridedSlice", "_MirrorOperator", "Receive", "MatMul", "allreduce"})
    CHECK_FALSE(collectiveOfType(other).has_value());
  CHECK(collectiveOf(stepOver(RedistStep::Kind::Gather, 4, {2, 3})) == CollectiveKind::AllGather);
  CHECK_FALSE(collectiveOf(stepOver(RedistStep::Kind::Split, 4, {2, 3})).has_value());
  CHECK_FALSE(collectiveOf(stepOver(RedistStep::Kind::Receive, 2, {2, 3})).has_value());
}

TEST_CASE("collectives' home: ring traffic and steps over 4 ranks, and the bytes a step sends") {
  CHECK(ringTraffic(CollectiveKind::AllReduce, 4) == 1.5);       // 2 * 3 / 4
  CHECK(ringTraffic(CollectiveKind::AllGather, 4) == 3);         // three parts from the others
  CHECK(ringTraffic(CollectiveKind::ReduceScatter, 4) == 0.75);  // 3 / 4 of the whole
  CHECK(ringTraffic(CollectiveKind::AlltoAll, 4) == 0.75);
  CHECK(ringTraffic(CollectiveKind::PointToPoint, 4) == 1);
  CHECK(ringTraffic(CollectiveKind::AllReduce, 1) == 0);
  CHECK(ringSteps(CollectiveKind::AllReduce, 4) == 6);
  CHECK(ringSteps(CollectiveKind::AllGather, 4) == 3);
  // A float32 [2, 3] block (24 bytes) on each of 4 ranks.
  CHECK(stepSendBytes(stepOver(RedistStep::Kind::AllReduce, 4, {2, 3}), 4) == 36);
  CHECK(stepSendBytes(stepOver(RedistStep::Kind::Gather, 4, {2, 3}), 4) == 72);
  CHECK(stepSendBytes(stepOver(RedistStep::Kind::ReduceScatter, 4, {2, 3}), 4) == 18);
  CHECK(stepSendBytes(stepOver(RedistStep::Kind::Split, 4, {2, 3}), 4) == 0);
  RedistStep mirror = stepOver(RedistStep::Kind::Mirror, 4, {2, 3});
  CHECK(stepSendBytes(mirror, 4) == 0);  // identity forward
  CHECK(mirrorGradientBytes(mirror, 4) == 36);
  mirror.shardedGradient = true;  // optimizer parallel: reduce-scattered
  CHECK(mirrorGradientBytes(mirror, 4) == 18);
}

TEST_CASE("collectives' home: alpha-beta-gamma seconds, a reduction paying its arithmetic") {
  CostModel m;
  m.alpha = 1e-5, m.beta = 1e-9, m.gamma = 1e-10;
  // 4 ranks, 1,000 bytes each: an AllReduce's 6 steps, 1,500 bytes sent, 1,000 bytes summed.
  CHECK(alphaBetaSeconds(CollectiveKind::AllReduce, 4, 1000, m) == relative(6e-5 + 1.5e-6 + 1e-7));
  CHECK(alphaBetaSeconds(CollectiveKind::AllGather, 4, 1000, m) == relative(3e-5 + 3e-6));
  CHECK(alphaBetaSeconds(CollectiveKind::ReduceScatter, 4, 1000, m) == relative(3e-5 + 7.5e-7 + 1e-7));
  CHECK(alphaBetaSeconds(CollectiveKind::AlltoAll, 4, 1000, m) == relative(3e-5 + 7.5e-7));
  CHECK(alphaBetaSeconds(CollectiveKind::PointToPoint, 2, 1000, m) == relative(1e-5 + 1e-6));
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("collectives' home: the steps passes make and the AllReduce + slice fusion") {
  // An [8, 8] parameter on a (2, 4) mesh split 4 ways on dim 1 only: its replica group is axis 0,
  // two ranks; one split over every axis has no mirror.
  DeviceMatrix mesh = DeviceMatrix::unnamed({2, 4});
  RedistStep mirror = mirrorStep(TensorLayout{mesh, {8, 8}, {{}, {1}}, {}, ReduceOp::Sum});
  CHECK(isMirror(mirror));
  CHECK(mirror.axes == std::vector<int>{0});
  CHECK(mirror.localBefore == Shape{8, 2});
  CHECK(mirror.groupSize() == 2);
  CHECK(mirrorStep(TensorLayout{mesh, {8, 8}, {{0}, {1}}, {}, ReduceOp::Sum}).groupSize() == 1);
  // A result partial over axis 1 ([4, 6] a rank), completed by an AllReduce over the 4 ranks;
  // sliced on dim 0 over the same axis it is one ReduceScatter leaving [1, 6].
  RedistStep reduce = completionStep(mesh, {1}, {4, 6});
  CHECK(completesPartial(reduce));
  CHECK(stepGroup(reduce, 5) == std::vector<int64_t>{4, 5, 6, 7});
  RedistStep slice;
  slice.kind = RedistStep::Kind::Split;
  slice.mesh = mesh;
  slice.axes = {1};
  slice.dim = 0;
  auto fused = fuseReduceThenSlice(reduce, slice, {4, 6});
  REQUIRE(fused);
  CHECK(fused->kind == RedistStep::Kind::ReduceScatter);
  CHECK(forwardStepLocalAfter(*fused, {4, 6}) == Shape{1, 6});
  CHECK(forwardStepLocalAfter(reduce, {4, 6}) == Shape{4, 6});
  // Sliced over the other axis (another group): no fusion.
  slice.axes = {0};
  CHECK_FALSE(fuseReduceThenSlice(reduce, slice, {4, 6}));
}

}  // namespace irc::test
