// Shardy's factor algorithm on plain structs (passes/propagation/factor_sharding.h): projection, stage A,
// stage B's conflict kinds, basic against aggressive, the aggressive order's keys one at a time,
// and the read-off with cross-factor clashes. No graph, no YAML.
#include <doctest/doctest.h>

#include "passes/propagation/factor_sharding.h"

namespace irc::test {
namespace {

using Axes = std::vector<int>;

// A tensor whose dim d is made of factors dims[d]; its sharding starts empty and open.
FactorTensor tensor(std::vector<std::vector<int>> dims, int64_t elements) {
  FactorTensor t;
  t.dimFactors = std::move(dims);
  t.dims.resize(t.dimFactors.size());
  t.elements = elements;
  return t;
}

FactorTensor closed(FactorTensor t, std::vector<Axes> axes) {
  for (size_t d = 0; d < axes.size(); ++d) {
    t.dims[d].axes = axes[d];
    t.dims[d].open = false;
  }
  return t;
}

FactorTensor holding(FactorTensor t, std::vector<Axes> axes) {
  for (size_t d = 0; d < axes.size(); ++d) t.dims[d].axes = axes[d];
  return t;
}

// Mesh {a: 2, b: 4, c: 2}; factors of the given sizes, all allowed, none replicated.
FactorProblem problem(std::vector<int64_t> factorSizes, std::vector<FactorTensor> tensors, bool elementwise = true) {
  FactorProblem p;
  p.meshDims = {2, 4, 2};
  p.factorSizes = factorSizes;
  p.allowed.assign(factorSizes.size(), true);
  p.replicated.assign(factorSizes.size(), false);
  p.elementwise = elementwise;
  p.tensors = std::move(tensors);
  return p;
}

constexpr int a = 0, b = 1, c = 2;

}  // namespace

TEST_CASE("projection hands a dim's axes to its factors major to minor, without sub-axes") {
  std::vector<int64_t> mesh = {2, 4, 2};
  // A merged dim of factors sized 2 and 4: {a} fills the major one, then {b} the minor one.
  CHECK(projectDim({0, 1}, {2, 4}, {a, b}, mesh) == std::vector<Axes>{{a}, {b}});
  // {b} (4) does not divide the major factor (2): it would need a sub-axis, so nothing goes.
  CHECK(projectDim({0, 1}, {2, 4}, {b}, mesh) == std::vector<Axes>{{}, {}});
  // The major factor not used up: the minor gets nothing even though axes remain.
  CHECK(projectDim({0, 1}, {8, 4}, {a, b}, mesh) == std::vector<Axes>{{a, b}, {}});
  // A blocked (replicated) major factor stops the dim.
  std::vector<bool> blocked = {true, false};
  CHECK(projectDim({0, 1}, {2, 4}, {a, b}, mesh, &blocked) == std::vector<Axes>{{}, {}});
  // Size-1 axes pass through unrecorded.
  CHECK(projectDim({0}, {4}, {0, 1}, {1, 4}) == std::vector<Axes>{{1}});
}

TEST_CASE("stage A: the longest compatible major prefix") {
  CHECK(longestCompatiblePrefix({{a}, {}, {a, b, c}, {a, c, b}}) == Axes{a});
  CHECK(longestCompatiblePrefix({{a}, {}, {a, b, c}, {a, b, 3}}) == Axes{a, b});  // the spec's example
  CHECK(longestCompatiblePrefix({{}, {b}}) == Axes{b});
  CHECK(longestCompatiblePrefix({{b}, {a}}).empty());
}

TEST_CASE("stage B truncates at each conflict kind (basic)") {
  // ReLU-like op: one factor of size 16 per dim; x holds {a, b}; y is the open result.
  auto relu = [](FactorTensor x, FactorTensor y) { return problem({16}, {std::move(x), std::move(y)}); };
  SUBCASE("no conflict: the result takes the whole list") {
    FactorProblem p = relu(holding(tensor({{0}}, 16), {{a, b}}), tensor({{0}}, 16));
    CHECK(propagateBasic(p) == std::vector<size_t>{1});
    CHECK(p.tensors[1].dims[0].axes == Axes{a, b});
  }
  SUBCASE("an axis another factor uses") {
    // Two factors: dim 0 (f0) and dim 1 (f1); y already holds b on f1.
    FactorProblem p =
        problem({16, 4}, {holding(tensor({{0}, {1}}, 64), {{a, b}, {}}), holding(tensor({{0}, {1}}, 64), {{}, {b}})});
    propagateBasic(p);
    CHECK(p.tensors[1].dims[0].axes == Axes{a});
  }
  SUBCASE("an axis a tensor holds as partial") {
    FactorTensor y = tensor({{0}}, 16);
    y.partial = {b};
    FactorProblem p = relu(holding(tensor({{0}}, 16), {{a, b}}), y);
    propagateBasic(p);
    CHECK(p.tensors[1].dims[0].axes == Axes{a});
  }
  SUBCASE("a closed dim") {
    FactorProblem p = relu(holding(tensor({{0}}, 16), {{a, b}}), closed(tensor({{0}}, 16), {{}}));
    CHECK(propagateBasic(p).empty());
  }
  SUBCASE("a barred (replicated) axis") {
    FactorTensor y = tensor({{0}}, 16);
    y.barred = {b};
    FactorProblem p = relu(holding(tensor({{0}}, 16), {{a, b}}), y);
    propagateBasic(p);
    CHECK(p.tensors[1].dims[0].axes == Axes{a});
  }
  SUBCASE("divisibility") {
    // A factor of size 4: {a} (2) fits, then {b} (4) does not divide the 2 left.
    FactorProblem p = problem({4}, {holding(tensor({{0}}, 4), {{a, b}}), tensor({{0}}, 4)});
    propagateBasic(p);
    CHECK(p.tensors[1].dims[0].axes == Axes{a});
  }
}

TEST_CASE("basic and aggressive differ: a conflict in one tensor no longer stops the factor for the others") {
  // Add(x, y) -> r over factors i (dim 0) and j (dim 1): x holds {a} on i, y holds {a} on j.
  auto add = [] {
    return problem(
        {8, 8}, {closed(tensor({{0}, {1}}, 64), {{a}, {}}), closed(tensor({{0}, {1}}, 64), {{}, {a}}), tensor({{0}, {1}}, 64)});
  };
  FactorProblem basic = add();
  // Basic: {a} on i is used by j in y, and on j by i in x: both lists are cut for everyone.
  CHECK(propagateBasic(basic).empty());
  FactorProblem aggressive = add();
  // Aggressive: i comes first (equal sources, x has the lower index); r takes {a} on i and then
  // cannot take it on j.
  CHECK(propagateAggressive(aggressive) == std::vector<size_t>{2});
  CHECK(aggressive.tensors[2].dims[0].axes == Axes{a});
  CHECK(aggressive.tensors[2].dims[1].axes.empty());
}

TEST_CASE("the aggressive order, one key at a time") {
  // Two factors competing for axis a on the open result r (dims i, j).
  auto compete = [](int64_t xElements, int64_t yElements, Axes xAxes, Axes yAxes, bool elementwise) {
    FactorProblem p = problem({16, 16},
                              {closed(tensor({{0}, {}}, xElements), {xAxes, {}}),
                               closed(tensor({{}, {1}}, yElements), {{}, yAxes}), tensor({{0}, {1}}, 256)},
                              elementwise);
    propagateAggressive(p);
    return p.tensors[2];
  };
  SUBCASE("the larger source tensor first") {
    FactorTensor r = compete(16, 32, {a}, {a}, true);
    CHECK(r.dims[1].axes == Axes{a});
    CHECK(r.dims[0].axes.empty());
  }
  SUBCASE("for elementwise ops, more axes first") {
    FactorTensor r = compete(16, 16, {a}, {a, c}, true);
    CHECK(r.dims[1].axes == Axes{a, c});
    CHECK(r.dims[0].axes.empty());
  }
  SUBCASE("not for other ops: then the lower tensor index") {
    FactorTensor r = compete(16, 16, {a}, {a, c}, false);
    CHECK(r.dims[0].axes == Axes{a});
    CHECK(r.dims[1].axes.empty());  // cut at its first axis, which r already uses: nothing is left
  }
  SUBCASE("the lower factor index last") {
    // One source holds f0 = {a} and f1 = {b}; the target has them merged in one dim (f0 major).
    // Visiting f0 first fills the major factor, after which the minor one may take {b} too.
    FactorProblem p = problem({2, 4}, {closed(tensor({{0}, {1}}, 8), {{a}, {b}}), tensor({{0, 1}}, 8)}, false);
    propagateAggressive(p);
    CHECK(p.tensors[1].dims[0].axes == Axes{a, b});
  }
}

TEST_CASE("read-off: candidates of all factors ranked together by carried size; one axis, one factor") {
  // Dot: x [i, k] holds {a} on i (32 elements), w [k, j] holds {a} on k (512), r [i, j] holds
  // {a} on i (256). i carries 32 + 256 = 288, k carries 512: k wins and i gets nothing.
  FactorProblem p = problem({4, 8, 64},
                            {closed(tensor({{0}, {1}}, 32), {{a}, {}}), closed(tensor({{1}, {2}}, 512), {{a}, {}}),
                             holding(tensor({{0}, {2}}, 256), {{a}, {}})},
                            false);
  auto s = resolveFactorShardings(p);
  CHECK(s[0].empty());
  CHECK(s[1] == Axes{a});
  CHECK(s[2].empty());
  // Equal carried sizes: the lower first carrier wins, then the lower factor.
  FactorProblem tie = problem({8, 8}, {closed(tensor({{0}, {1}}, 64), {{a}, {}}), closed(tensor({{0}, {1}}, 64), {{}, {a}})});
  auto t = resolveFactorShardings(tie);
  CHECK(t[0] == Axes{a});
  CHECK(t[1].empty());
  // A replicated factor never takes axes.
  tie.replicated = {true, false};
  auto u = resolveFactorShardings(tie);
  CHECK(u[0].empty());
  CHECK(u[1] == Axes{a});
}

}  // namespace irc::test
