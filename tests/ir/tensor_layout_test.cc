// The layout algebra: rank <-> coordinate, slices, shard numbers, replica and communication
// groups, standard form, validation, and the tiling property.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>

#include "ir/layout_notation.h"
#include "ir/tensor_layout.h"

namespace irc::test {
namespace {

TensorLayout named(std::vector<int64_t> dev, std::vector<std::string> names, Shape shape, DimAxes dims) {
  TensorLayout l;
  l.mesh = DeviceMatrix::unnamed(std::move(dev));
  l.mesh.names = std::move(names);
  l.shape = std::move(shape);
  l.dims = std::move(dims);
  return l;
}

}  // namespace

TEST_CASE("ranks are row-major over the device matrix, last axis fastest") {
  DeviceMatrix m = DeviceMatrix::unnamed({2, 1, 4});
  CHECK(m.coord(6) == std::vector<int64_t>{1, 0, 2});
  CHECK(m.rankOf({1, 0, 2}) == 6);
  CHECK(m.names == std::vector<std::string>{"axis_0", "axis_1", "axis_2"});
}

TEST_CASE("slices, block indices and shard numbers") {
  // Seed 000, 2.1.1: dev (2,1,2,2,1), map (b, d, e, c, a), shape (1,2,1,2,2).
  TensorLayout l = named({2, 1, 2, 2, 1}, {"a", "b", "c", "d", "e"}, {1, 2, 1, 2, 2}, {{1}, {3}, {4}, {2}, {0}});
  std::vector<int64_t> shards;
  for (int r = 0; r < 8; ++r) shards.push_back(l.shardNumber(r));
  CHECK(shards == std::vector<int64_t>{0, 4, 2, 6, 1, 5, 3, 7});
  CHECK(l.sliceShape() == Shape{1, 1, 1, 1, 1});
  CHECK(l.sliceRanges(5) == std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {0, 1}, {0, 1}, {1, 2}});
}

TEST_CASE("several axes on one dim: mixed radix, major first") {
  TensorLayout l = named({2, 4}, {"dp", "mp"}, {16, 8}, {{1, 0}, {}});  // (mp, dp) on dim 0
  CHECK(l.sliceShape() == Shape{2, 8});
  // rank 1: dp=0, mp=1 -> index 1*2 + 0 = 2; rank 4: dp=1, mp=0 -> 1.
  CHECK(l.blockIndex(1) == std::vector<int64_t>{2, 0});
  CHECK(l.blockIndex(4) == std::vector<int64_t>{1, 0});
  CHECK(printAliasLayout(l) == "((mp, dp), None)");
  CHECK(printTensorMapIndex(l) == "[(0, 1), -1]");
  CHECK(!printSbp(l));  // nested against mesh order: not expressible in SBP
  CHECK(!printDimsMapping(l));
}

TEST_CASE("replica groups and communication groups") {
  TensorLayout l = named({2, 4}, {"dp", "mp"}, {8, 8}, {{0}, {}});
  CHECK(l.replicaGroup(5) == std::vector<int64_t>{4, 5, 6, 7});
  l.partialAxes = {1};
  CHECK(l.replicaGroup(5) == std::vector<int64_t>{5});
  DeviceMatrix m = DeviceMatrix::unnamed({2, 2, 2});
  CHECK(groupAlongAxes(m, 5, {0}) == std::vector<int64_t>{1, 5});
  CHECK(groupAlongAxes(m, 5, {2, 0}) == groupAlongAxes(m, 5, {0, 2}));  // axis order given does not matter
  CHECK(groupAlongAxes(m, 5, {0, 2}) == std::vector<int64_t>{0, 1, 4, 5});
}

TEST_CASE("MindSpore group names hash the joined rank list") {
  CHECK(groupRanksText({0, 1, 2, 3}) == "0-1-2-3");
  CHECK(mindsporeGroupName({0, 1, 2, 3}) == "4-6301172352641561019");
}

TEST_CASE("shard strategy: repeated calculation is appended on the right with the +1 map shift") {
  TensorLayout l = std::get<TensorLayout>(layoutFromStrategy({2, 1}, 8, {64, 64}));
  CHECK(l.mesh.dims == std::vector<int64_t>{2, 1, 4});
  CHECK(printTensorMapIndex(l) == "[2, 1]");
  // Seed 000, 2.2.2: strategy (2,1,1,2,1) on 8 devices; copies sit on adjacent ranks.
  TensorLayout s = std::get<TensorLayout>(layoutFromStrategy({2, 1, 1, 2, 1}, 8, {2, 1, 1, 2, 1}));
  std::vector<int64_t> shards;
  for (int r = 0; r < 8; ++r) shards.push_back(s.shardNumber(r));
  CHECK(shards == std::vector<int64_t>{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(std::get<NotationError>(layoutFromStrategy({3, 1}, 8, {6, 6})).message ==
        "strategy (3, 1) uses 3 devices, which does not divide device_num 8");
}

TEST_CASE("standard form drops size-1 axes; equality is taken there") {
  TensorLayout a = std::get<TensorLayout>(layoutFromStrategy({16, 1}, 16, {32, 32}));
  a.mesh.dims = {16, 1, 1};
  a.mesh.names = {"x", "y", "z"};
  a.dims = {{0}, {2}};  // dev [16,1,1] map [2, 0]
  TensorLayout b = named({16}, {"x"}, {32, 32}, {{0}, {}});
  CHECK(a.standardForm().mesh.dims == std::vector<int64_t>{16});
  CHECK(a.standardForm().dims == DimAxes{{0}, {}});
  CHECK(a.sameAs(b));
  b.dims = {{}, {0}};
  CHECK(!a.sameAs(b));
}

TEST_CASE("validation names the problem and lists what would divide") {
  TensorLayout l = named({2, 4}, {"dp", "mp"}, {6, 8}, {{1}, {}});
  CHECK(validateLayout(l, "x")->message ==
        "dim 0 of 'x' (size 6) cannot be split 4 ways; split counts that divide it: 1, 2, 3, 6");
  l.dims = {{0}, {0}};
  CHECK(validateLayout(l, "x")->message == "device axis 'dp' is used twice in the layout of 'x' (dims 0 and 1)");
  l.dims = {{0}, {}};
  l.partialAxes = {0};
  CHECK(validateLayout(l, "x")->message == "device axis 'dp' of 'x' is both splitting dim 0 and partial");
}

TEST_CASE("property: the blocks of all ranks tile the tensor, each held by device_num / blocks ranks") {
  std::mt19937 rng(20261121);
  for (int trial = 0; trial < 300; ++trial) {
    int axes = 1 + static_cast<int>(rng() % 4);
    std::vector<int64_t> dev;
    int64_t devices = 1;
    for (int a = 0; a < axes; ++a) {
      int64_t d = int64_t{1} << (rng() % 3);  // 1, 2 or 4
      if (devices * d > 64) d = 1;
      dev.push_back(d);
      devices *= d;
    }
    int rank = 1 + static_cast<int>(rng() % 3);
    TensorLayout l;
    l.mesh = DeviceMatrix::unnamed(dev);
    l.dims.assign(rank, {});
    std::vector<int> order(axes);
    for (int a = 0; a < axes; ++a) order[a] = a;
    std::shuffle(order.begin(), order.end(), rng);
    for (int a : order)
      if (rng() % 3 != 0) l.dims[rng() % rank].push_back(a);
    for (int d = 0; d < rank; ++d) l.shape.push_back(l.splitsOfDim(d) * (1 + static_cast<int64_t>(rng() % 3)));
    REQUIRE(!validateLayout(l, "t"));
    CAPTURE(printAliasLayout(l));
    // Count, per element, how many ranks hold it; each must be held by exactly
    // device_num / blocks ranks, and the blocks must cover the tensor.
    int64_t blocks = 1;
    for (int d = 0; d < rank; ++d) blocks *= l.splitsOfDim(d);
    std::map<std::vector<int64_t>, int64_t> holders;
    for (int64_t r = 0; r < devices; ++r) {
      auto ranges = l.sliceRanges(r);
      std::vector<int64_t> idx(rank);
      std::function<void(int)> visit = [&](int d) {
        if (d == rank) {
          ++holders[idx];
          return;
        }
        for (idx[d] = ranges[d].first; idx[d] < ranges[d].second; ++idx[d]) visit(d + 1);
      };
      visit(0);
    }
    CHECK(static_cast<int64_t>(holders.size()) == numElements(l.shape));
    for (const auto& [element, count] : holders) CHECK(count == devices / blocks);
  }
}

TEST_CASE("sameAs is equality of the standard forms, size-1 axes and names aside") {
  // sameAs compares without building the standard forms; check it against them on random
  // layouts over small meshes (and a few of 15 to 20 axes) with size-1 axes, shared and partial
  // axes. Where the meshes differ once size-1 axes are dropped, the coarsest forms decide
  // (checked against every rank's blocks in the next case).
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto randomLayout = [&]() {
    std::vector<int64_t> dev;
    // Now and then a mesh of more axes than sameAs renumbers on the stack (16).
    const int axes = pick(10) == 0 ? 15 + pick(6) : 1 + pick(4);
    for (int a = 0; a < axes; ++a) dev.push_back(std::vector<int64_t>{1, 2, 4}[pick(3)]);
    TensorLayout l;
    l.mesh = DeviceMatrix::unnamed(dev);
    l.shape = Shape(1 + pick(2), 8);
    l.dims.assign(l.shape.size(), {});
    for (int a = 0; a < l.mesh.rank(); ++a) {
      int where = pick(static_cast<int>(l.shape.size()) + 2);  // a dim, partial, or unused
      if (where < static_cast<int>(l.shape.size())) l.dims[where].push_back(a);
      else if (where == static_cast<int>(l.shape.size())) l.partialAxes.push_back(a);
    }
    l.partialOp = pick(2) ? ReduceOp::Sum : ReduceOp::Max;
    return l;
  };
  auto sameForm = [](const TensorLayout& x, const TensorLayout& y) {
    return x.mesh.dims == y.mesh.dims && x.shape == y.shape && x.dims == y.dims && x.partialAxes == y.partialAxes &&
           x.partialOp == y.partialOp;
  };
  auto reference = [&](const TensorLayout& a, const TensorLayout& b) {
    TensorLayout x = a.standardForm(), y = b.standardForm();
    if (x.mesh.dims == y.mesh.dims) return sameForm(x, y);
    return a.mesh.deviceCount() == b.mesh.deviceCount() && sameForm(a.coarsestForm(), b.coarsestForm());
  };
  int equal = 0;
  for (int i = 0; i < 20000; ++i) {
    TensorLayout a = randomLayout(), b = randomLayout();
    if (pick(2)) b = a.standardForm();  // equal ones too, in the other form
    if (pick(4) == 0) b.mesh.names = std::vector<std::string>(b.mesh.rank(), "n");
    CAPTURE(i);
    CHECK(a.sameAs(b) == reference(a, b));
    CHECK(b.sameAs(a) == reference(b, a));
    equal += reference(a, b);
  }
  CHECK(equal > 1000);  // the comparison saw both answers
}

TEST_CASE("sameAs holds exactly when every rank holds the same block and partial piece, across refined meshes") {
  // Brute force over every rank: its slice ranges and which partial piece it holds (mixed radix
  // over the partial axes). One layout is random; the other is it on a refined mesh (an axis of
  // 4 split 2 x 2, MindSpore's device-arrangement expansion: always the same) or a random layout
  // over the refined mesh (the same or not).
  std::mt19937 rng(11);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto piece = [](const TensorLayout& l, int64_t r) {
    std::vector<int64_t> c = l.mesh.coord(r);
    int64_t p = 0;
    for (int a : l.partialAxes) p = p * l.mesh.dims[a] + c[a];
    return p;
  };
  auto sameEverywhere = [&](const TensorLayout& a, const TensorLayout& b) {
    if (a.mesh.deviceCount() != b.mesh.deviceCount()) return false;
    if (a.isPartial() != b.isPartial()) return false;
    for (int64_t r = 0; r < a.mesh.deviceCount(); ++r)
      if (a.sliceRanges(r) != b.sliceRanges(r) || piece(a, r) != piece(b, r)) return false;
    return true;
  };
  auto randomOn = [&](std::vector<int64_t> dev, Shape shape) {
    TensorLayout l;
    l.mesh = DeviceMatrix::unnamed(std::move(dev));
    l.shape = std::move(shape);
    l.dims.assign(l.shape.size(), {});
    for (int a = 0; a < l.mesh.rank(); ++a) {
      int where = pick(static_cast<int>(l.shape.size()) + 2);
      if (where < static_cast<int>(l.shape.size())) l.dims[where].push_back(a);
      else if (where == static_cast<int>(l.shape.size())) l.partialAxes.push_back(a);
    }
    return l;
  };
  int same = 0, checked = 0;
  for (int i = 0; i < 4000; ++i) {
    std::vector<int64_t> dev;
    for (int a = 0, n = 1 + pick(3); a < n; ++a) dev.push_back(pick(2) ? 4 : 2);
    TensorLayout a = randomOn(dev, Shape{64, 64});
    // Refine one axis of 4 into 2 x 2, keeping a's roles: the split halves go where the axis went.
    int axis = -1;
    for (int x = 0; x < a.mesh.rank(); ++x)
      if (a.mesh.dims[x] == 4 && axis < 0) axis = x;
    if (axis < 0) continue;
    std::vector<int64_t> refined = dev;
    refined[axis] = 2;
    refined.insert(refined.begin() + axis + 1, 2);
    TensorLayout b;
    if (pick(2)) {
      b = a;
      b.mesh = DeviceMatrix::unnamed(refined);
      auto shift = [&](std::vector<int>& axes) {
        std::vector<int> out;
        for (int x : axes) {
          if (x == axis) {
            out.push_back(axis);
            out.push_back(axis + 1);
          } else {
            out.push_back(x > axis ? x + 1 : x);
          }
        }
        axes = out;
      };
      for (auto& d : b.dims) shift(d);
      shift(b.partialAxes);
    } else {
      b = randomOn(refined, a.shape);
    }
    if (validateLayout(a, "a") || validateLayout(b, "b")) continue;
    CAPTURE(i);
    bool truth = sameEverywhere(a, b);
    CHECK(a.sameAs(b) == truth);
    CHECK(b.sameAs(a) == truth);
    same += truth;
    ++checked;
  }
  CHECK(same > 300);
  CHECK(checked - same > 300);
}

}  // namespace irc::test
