// The redistribution planners against a block-level simulation: random pairs of layouts (up to
// 4 device axes, 64 ranks, tensors of rank 1-4, partial sources included); every rank starts
// with its block of A (partial values split into random integer pieces), the plan's steps are
// executed with their per-rank arguments, and every rank must end with exactly its block of B.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>

#include <fmt/format.h>

#include "ir/tensor_value.h"
#include "plan/optimal_planner.h"
#include "plan/redistribution_planner.h"

namespace irc::test {
namespace {

std::string printTensorMapIndexFor(const TensorLayout& l) {
  std::string out = "[";
  for (const auto& axes : l.dims)
    out += fmt::format("{},", axes.size() == 1 ? std::to_string(axes[0]) : axes.empty() ? "-" : "*");
  return out + "]";
}

// Executes one step on every rank (ops.md semantics: AllGather concatenates on dim 0, then the
// blocks move to the step's dim; AlltoAll sends block j of split_dim to member j).
void execute(const RedistStep& s, std::vector<TensorValue>& local) {
  std::vector<TensorValue> next = local;
  for (size_t r = 0; r < local.size(); ++r) {
    int64_t rank = static_cast<int64_t>(r);
    std::vector<int64_t> group = s.kind == RedistStep::Kind::Reshape || s.kind == RedistStep::Kind::Split
                                     ? std::vector<int64_t>{rank}
                                     : stepGroup(s, rank);
    int64_t me = std::find(group.begin(), group.end(), rank) - group.begin();
    switch (s.kind) {
      case RedistStep::Kind::Reshape: next[r].shape = s.localAfter; break;
      case RedistStep::Kind::Split: {
        auto [begin, end] = splitBounds(s, rank);
        std::vector<std::pair<int64_t, int64_t>> ranges;
        for (size_t d = 0; d < begin.size(); ++d) ranges.emplace_back(begin[d], end[d]);
        next[r] = sliceOf(local[r], ranges);
        break;
      }
      case RedistStep::Kind::Gather: {
        std::vector<TensorValue> parts;
        for (int64_t m : group) parts.push_back(local[m]);
        TensorValue gathered = concatAlong(parts, 0);
        if (s.dim != 0) {
          std::vector<TensorValue> blocks;
          for (size_t j = 0; j < group.size(); ++j)
            blocks.push_back(blockAlong(gathered, 0, static_cast<int64_t>(group.size()), j));
          gathered = concatAlong(blocks, s.dim);
        }
        next[r] = gathered;
        break;
      }
      case RedistStep::Kind::AlltoAll: {
        std::vector<TensorValue> received;
        for (int64_t m : group) received.push_back(blockAlong(local[m], s.dim, static_cast<int64_t>(group.size()), me));
        next[r] = concatAlong(received, s.concatDim);
        break;
      }
      case RedistStep::Kind::AllReduce:
      case RedistStep::Kind::ReduceScatter: {
        TensorValue sum = TensorValue::zeros(local[r].shape);
        for (int64_t m : group)
          for (int64_t i = 0; i < sum.size(); ++i) sum.data[i] += local[m].data[i];
        // ReduceScatter on a dim d: member i keeps block i of d (the planner stacks the blocks on
        // dim 0 first when d is not 0; the result is the same).
        next[r] = s.kind == RedistStep::Kind::AllReduce
                      ? sum
                      : blockAlong(sum, std::max(s.dim, 0), static_cast<int64_t>(group.size()), me);
        break;
      }
      default: FAIL("unexpected step");
    }
  }
  local = std::move(next);
}

std::vector<int64_t> randomMesh(std::mt19937& rng, int64_t devices) {
  // A random factorisation of `devices` (a power of two) into up to 4 axes.
  std::vector<int64_t> dims;
  while (devices > 1 && dims.size() < 3) {
    int64_t d = int64_t{1} << (1 + rng() % 2);
    if (d > devices) d = devices;
    dims.push_back(d);
    devices /= d;
  }
  if (devices > 1) dims.push_back(devices);
  if (dims.empty()) dims.push_back(1);
  return dims;
}

TensorLayout randomLayout(std::mt19937& rng, const std::vector<int64_t>& mesh, const Shape& shape, bool mayBePartial) {
  TensorLayout l;
  l.mesh = DeviceMatrix::unnamed(mesh);
  l.shape = shape;
  l.dims.assign(shape.size(), {});
  std::vector<int> axes(mesh.size());
  for (size_t a = 0; a < axes.size(); ++a) axes[a] = static_cast<int>(a);
  std::shuffle(axes.begin(), axes.end(), rng);
  for (int a : axes) {
    int choice = static_cast<int>(rng() % (shape.size() + 2));
    if (choice < static_cast<int>(shape.size())) {
      size_t d = static_cast<size_t>(choice);
      if (shape[d] % (l.splitsOfDim(d) * mesh[a]) == 0) l.dims[d].push_back(a);
    } else if (choice == static_cast<int>(shape.size()) && mayBePartial) {
      l.partialAxes.push_back(a);
    }
  }
  std::sort(l.partialAxes.begin(), l.partialAxes.end());
  return l;
}

void checkPlan(const RedistPlan& plan, const TensorLayout& a, const TensorLayout& b, std::mt19937& rng) {
  int64_t devices = a.mesh.deviceCount();
  TensorValue global = TensorValue::zeros(a.shape);
  for (int64_t i = 0; i < global.size(); ++i) global.data[i] = static_cast<double>(i + 1);
  std::vector<TensorValue> local(devices);
  for (int64_t r = 0; r < devices; ++r) local[r] = sliceOf(global, a.sliceRanges(r));
  if (a.isPartial()) {
    // Split every element into random integer pieces over its partial group.
    std::map<std::vector<int64_t>, bool> done;
    for (int64_t r = 0; r < devices; ++r) {
      std::vector<int64_t> group = groupAlongAxes(a.mesh, r, a.partialAxes);
      if (done[group]) continue;
      done[group] = true;
      for (int64_t i = 0; i < local[r].size(); ++i) {
        double total = local[group[0]].data[i], left = total;
        for (size_t m = 0; m + 1 < group.size(); ++m) {
          double piece = static_cast<double>(static_cast<int64_t>(rng() % 1000) - 500);
          local[group[m]].data[i] = piece;
          left -= piece;
        }
        local[group.back()].data[i] = left;
      }
    }
  }
  for (const RedistStep& s : plan.steps) execute(s, local);
  for (int64_t r = 0; r < devices; ++r) {
    CAPTURE(r);
    TensorValue want = sliceOf(global, b.sliceRanges(r));
    REQUIRE(local[r].shape == want.shape);
    CHECK(local[r].data == want.data);
  }
}

}  // namespace

TEST_CASE("both planners move every rank's block exactly where the target layout puts it") {
  std::mt19937 rng(7);
  int pairs = 0, cheaper = 0, partialSources = 0, scatters = 0;
  double savedShare = 0;
  // The sanitizer builds check the first 200 pairs (CI's time).
#ifdef IRC_SANITIZED
  constexpr int kTrials = 200;
#else
  constexpr int kTrials = 400;
#endif
  for (int trial = 0; trial < kTrials; ++trial) {
    int64_t devices = int64_t{1} << (1 + rng() % 6);  // 2 .. 64 ranks
    size_t rank = 1 + rng() % 4;
    Shape shape;  // at most 2^12 elements: enough blocks for 64 ranks, small enough to simulate
    for (size_t d = 0; d < rank; ++d) shape.push_back(int64_t{4} << (rng() % (rank > 2 ? 2 : 3)));
    TensorLayout a = randomLayout(rng, randomMesh(rng, devices), shape, true);
    // Every other source is partial over one more axis it does not split (sources come out
    // partial rarely otherwise, and partial sources are where ReduceScatter pays).
    if (trial % 2 == 1) {
      std::vector<int> free;
      for (int x = 0; x < a.mesh.rank(); ++x) {
        bool used = std::count(a.partialAxes.begin(), a.partialAxes.end(), x) > 0;
        for (const auto& axes : a.dims) used = used || std::count(axes.begin(), axes.end(), x) > 0;
        if (!used && a.mesh.dims[x] > 1) free.push_back(x);
      }
      if (!free.empty()) {
        a.partialAxes.push_back(free[rng() % free.size()]);
        std::sort(a.partialAxes.begin(), a.partialAxes.end());
      }
    }
    TensorLayout b = randomLayout(rng, randomMesh(rng, devices), shape, false);
    CAPTURE(fmt::format("{} partial {} on {} -> {} on {}", printTensorMapIndexFor(a), a.partialAxes.size(),
                        formatShape(a.mesh.dims), printTensorMapIndexFor(b), formatShape(b.mesh.dims)));
    PlannerOptions options{trial % 2 == 0, 4};
    RedistPlan mindspore = planRedistribution(a, b, options);
    RedistPlan optimal = planOptimal(a, b, options, CostModel{});
    checkPlan(mindspore, a, b, rng);
    checkPlan(optimal, a, b, rng);
    double tm = planTime(mindspore, 4, CostModel{}), to = planTime(optimal, 4, CostModel{});
    CHECK(to <= tm * (1 + 1e-12) + 1e-15);
    ++pairs;
    partialSources += a.isPartial() ? 1 : 0;
    scatters += std::any_of(optimal.steps.begin(), optimal.steps.end(),
                            [](const RedistStep& s) { return s.kind == RedistStep::Kind::ReduceScatter; });
    if (to < tm * (1 - 1e-9)) {
      ++cheaper;
      savedShare += (tm - to) / tm;
    }
  }
  MESSAGE(fmt::format(
      "optimal strictly cheaper on {} of {} pairs ({:.1f}%), saving {:.1f}% of the MindSpore plan's time on those; "
      "{} partial sources, {} optimal plans with a ReduceScatter",
      cheaper, pairs, 100.0 * cheaper / pairs, cheaper ? 100.0 * savedShare / cheaper : 0.0, partialSources, scatters));
}

TEST_CASE("the seed FFN's edge: a StridedSlice of (0, 0)..(32, 16) on rank 0, (0, 16)..(32, 32) on rank 1") {
  TensorLayout from;
  from.mesh = DeviceMatrix::unnamed({2, 4, 1});
  from.shape = {64, 64};
  from.dims = {{0}, {2}};
  TensorLayout to;
  to.mesh = DeviceMatrix::unnamed({2, 4});
  to.shape = {64, 64};
  to.dims = {{0}, {1}};
  RedistPlan plan = planRedistribution(from, to, {});
  REQUIRE(plan.steps.size() == 1);
  CHECK(plan.steps[0].kind == RedistStep::Kind::Split);
  CHECK(splitBounds(plan.steps[0], 0) == std::make_pair(IntTuple{0, 0}, IntTuple{32, 16}));
  CHECK(splitBounds(plan.steps[0], 1) == std::make_pair(IntTuple{0, 16}, IntTuple{32, 32}));
  CHECK(splitBounds(plan.steps[0], 5) == std::make_pair(IntTuple{0, 16}, IntTuple{32, 32}));
  CHECK(plan.cost.comm == 0);
  CHECK(plan.cost.compute == 32 * 64 * 4);
}

TEST_CASE("MindSpore's plan gathers on dim 1 with AllGather + Split + Concat; with enable_alltoall it permutes") {
  TensorLayout from;
  from.mesh = DeviceMatrix::unnamed({4});
  from.shape = {8, 8};
  from.dims = {{}, {0}};
  TensorLayout to = from;
  to.dims = {{0}, {}};
  RedistPlan plain = planRedistribution(from, to, {false, 4});
  REQUIRE(plain.steps.size() == 2);
  CHECK(plain.steps[0].kind == RedistStep::Kind::Gather);
  CHECK(plain.steps[0].dim == 1);
  CHECK(plain.steps[1].kind == RedistStep::Kind::Split);
  CHECK(stepGroup(plain.steps[0], 2) == std::vector<int64_t>{0, 1, 2, 3});
  // AllGather comm 0.5 (n+1) P with P = 8*2*4 bytes: 80, corrected to 3072; compute P + 2nP.
  CHECK(plain.cost.comm == 3072);
  RedistPlan a2a = planRedistribution(from, to, {true, 4});
  REQUIRE(a2a.steps.size() == 1);
  CHECK(a2a.steps[0].kind == RedistStep::Kind::AlltoAll);
  CHECK(a2a.steps[0].dim == 0);
  CHECK(a2a.steps[0].concatDim == 1);
}

TEST_CASE("the optimal planner fuses a partial sum and a split into ReduceScatter") {
  TensorLayout from;
  from.mesh = DeviceMatrix::unnamed({4});
  from.shape = {16, 8};
  from.dims = {{}, {}};
  from.partialAxes = {0};
  TensorLayout to = from;
  to.partialAxes = {};
  to.dims = {{0}, {}};
  RedistPlan plan = planOptimal(from, to, {}, CostModel{});
  REQUIRE(plan.steps.size() == 1);
  CHECK(plan.steps[0].kind == RedistStep::Kind::ReduceScatter);
  RedistPlan ms = planRedistribution(from, to, {});
  REQUIRE(ms.steps.size() == 2);
  CHECK(ms.steps[0].kind == RedistStep::Kind::AllReduce);
  CHECK(ms.steps[1].kind == RedistStep::Kind::Split);
}

}  // namespace irc::test

namespace irc::test {

TEST_CASE("device matrices without a common refinement: gather whole, then split on the other mesh") {
  std::mt19937 rng(3);
  TensorLayout a;
  a.mesh = DeviceMatrix::unnamed({3, 2});
  a.shape = {6, 4};
  a.dims = {{0}, {1}};
  TensorLayout b;
  b.mesh = DeviceMatrix::unnamed({2, 3});
  b.shape = {6, 4};
  b.dims = {{1}, {0}};
  RedistPlan ms = planRedistribution(a, b, {});
  RedistPlan opt = planOptimal(a, b, {}, CostModel{});
  REQUIRE(!ms.steps.empty());
  checkPlan(ms, a, b, rng);
  checkPlan(opt, a, b, rng);
}

}  // namespace irc::test
