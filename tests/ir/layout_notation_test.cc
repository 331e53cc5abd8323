// Every notation parses into the one layout and prints back (round trips).
#include <doctest/doctest.h>

#include "ir/layout_notation.h"
#include "ir/trim.h"

namespace irc::test {
namespace {

DeviceMatrix mesh(std::vector<int64_t> dims, std::vector<std::string> names) {
  DeviceMatrix m = DeviceMatrix::unnamed(std::move(dims));
  m.names = std::move(names);
  return m;
}

TensorLayout withAssignment(const DeviceMatrix& m, Shape shape, const AxisAssignment& a) {
  return TensorLayout{m, std::move(shape), a.dims, a.partialAxes, a.partialOp};
}

}  // namespace

TEST_CASE("alias layout form, including several axes on one dim") {
  DeviceMatrix m = mesh({2, 4}, {"dp", "mp"});
  DimAxes dims = std::get<DimAxes>(parseAliasMap({{"dp", "mp"}, {"None"}}, m));
  CHECK(dims == DimAxes{{0, 1}, {}});
  TensorLayout l{m, {8, 8}, dims, {}, ReduceOp::Sum};
  CHECK(printAliasLayout(l) == "((dp, mp), None)");
  CHECK(printSbp(l) == std::optional<std::string>("(S(0), S(0))"));
  CHECK(std::get<NotationError>(parseAliasMap({{"dp"}, {"tp"}}, m)).message ==
        "unknown device axis 'tp' (alias_name has: dp, mp); did you mean 'dp'?");
  CHECK(std::get<NotationError>(parseAliasMap({{"dp"}, {"dp"}}, m)).entry == 1);
}

TEST_CASE("MindSpore integer tensor map counts from the right") {
  DeviceMatrix m = mesh({2, 4}, {"dp", "mp"});
  DimAxes dims = std::get<DimAxes>(parseTensorMapIndex({{1}, {-1}}, m));
  CHECK(dims == DimAxes{{0}, {}});
  TensorLayout l{m, {8, 8}, dims, {}, ReduceOp::Sum};
  CHECK(printTensorMapIndex(l) == "[1, -1]");
  CHECK(std::get<DimAxes>(parseTensorMapIndex({{1, 0}, {-1}}, m)) == DimAxes{{0, 1}, {}});
}

TEST_CASE("nd-SBP round trip, with partial") {
  DeviceMatrix m = mesh({2, 2}, {"group", "device"});
  AxisAssignment a = std::get<AxisAssignment>(parseSbp({"B", "S(0)"}, m, 2));
  TensorLayout l = withAssignment(m, {4, 8}, a);
  CHECK(*printSbp(l) == "(B, S(0))");
  CHECK(printAliasLayout(l) == "(device, None)");
  AxisAssignment p = std::get<AxisAssignment>(parseSbp({"P(max)", "S(1)"}, m, 2));
  CHECK(p.partialAxes == std::vector<int>{0});
  CHECK(p.partialOp == ReduceOp::Max);
  CHECK(*printSbp(withAssignment(m, {4, 8}, p)) == "(P(max), S(1))");
  CHECK(std::get<NotationError>(parseSbp({"S(2)", "B"}, m, 2)).message ==
        "'S(2)' names tensor dim 2; the tensor has rank 2 (valid: 0 .. 1)");
  CHECK(std::get<NotationError>(parseSbp({"B"}, m, 2)).message ==
        "sbp has 1 entries; it needs one per device-matrix axis (2: group, device)");
}

TEST_CASE("DTensor placements round trip") {
  DeviceMatrix m = mesh({2, 2}, {"x", "y"});
  AxisAssignment a = std::get<AxisAssignment>(parsePlacements({"Shard(1)", "Partial()"}, m, 2));
  TensorLayout l = withAssignment(m, {4, 4}, a);
  CHECK(*printPlacements(l) == "(Shard(1), Partial(sum))");
  CHECK(std::get<NotationError>(parsePlacements({"Shard(0)", "Sharded"}, m, 2)).message ==
        "'Sharded' is not a placements entry; expected Replicate(), Shard(i), Partial() or Partial(op)");
}

TEST_CASE("Paddle dims_mapping with partial (seed 004)") {
  DeviceMatrix m = mesh({2, 2}, {"axis_0", "axis_1"});
  AxisAssignment a = std::get<AxisAssignment>(parseDimsMapping({1, 0, -1}, {}, m));
  TensorLayout l = withAssignment(m, {16, 1024, 1024}, a);
  CHECK(printTensorMapIndex(l) == "[0, 1, -1]");
  CHECK(*printPlacements(l) == "(Shard(1), Shard(0))");
  CHECK(l.sliceShape() == Shape{8, 512, 1024});
  AxisAssignment p = std::get<AxisAssignment>(parseDimsMapping({-1, 1}, {0}, m));
  TensorLayout lp = withAssignment(m, {4096, 4096}, p);
  CHECK(*printPlacements(lp) == "(Partial(sum), Shard(1))");
  CHECK(lp.partialFromRight() == std::vector<int>{1});
  CHECK(*printDimsMapping(lp) == "[-1, 1]");
  CHECK(std::get<NotationError>(parseDimsMapping({0, 0}, {}, m)).message ==
        "mesh axis 0 is used twice in dims_mapping (dims 0 and 1)");
}

TEST_CASE("every notation of one layout parses back to the same layout") {
  DeviceMatrix m = mesh({2, 2, 2}, {"a", "b", "c"});
  TensorLayout l{m, {8, 4, 2}, {{0, 2}, {}, {1}}, {}, ReduceOp::Sum};
  AxisAssignment fromSbp = std::get<AxisAssignment>(parseSbp(splitTopLevel(*printSbp(l)), m, 3));
  CHECK(fromSbp.dims == l.dims);
  AxisAssignment fromPlacements = std::get<AxisAssignment>(parsePlacements(splitTopLevel(*printPlacements(l)), m, 3));
  CHECK(fromPlacements.dims == l.dims);
  std::vector<std::vector<std::string>> aliases;
  for (const auto& e : splitTopLevel(printAliasLayout(l))) aliases.push_back(splitTopLevel(e));
  CHECK(std::get<DimAxes>(parseAliasMap(aliases, m)) == l.dims);
}

TEST_CASE("splitTopLevel keeps nested tuples and call parentheses") {
  CHECK(splitTopLevel("(dp, None)") == std::vector<std::string>{"dp", "None"});
  CHECK(splitTopLevel("((dp, mp), None)") == std::vector<std::string>{"(dp, mp)", "None"});
  CHECK(splitTopLevel("S(0),B") == std::vector<std::string>{"S(0)", "B"});
  CHECK(splitTopLevel("Shard(0), Replicate()") == std::vector<std::string>{"Shard(0)", "Replicate()"});
}

TEST_CASE("one DTensor placement: the grammar a plan's input_layouts and output_layouts share with placements lists") {
  auto kindOf = [](std::string_view text) { return parsePlacement(text)->kind; };
  CHECK(kindOf("Replicate()") == Placement::Kind::Replicate);
  CHECK(kindOf("Replicate") == Placement::Kind::Replicate);
  CHECK(parsePlacement("Shard(1)")->dim == 1);
  CHECK(parsePlacement(" Shard( -1 ) ")->dim == -1);  // blanks ignored; negative dims count from the end
  CHECK(kindOf("Partial()") == Placement::Kind::Partial);
  CHECK(parsePlacement("Partial(max)")->op == ReduceOp::Max);
  for (const char* bad : {"Shard()", "Shard(x)", "Partial(avg)", "replicate()", "S(0)", ""})
    CHECK_MESSAGE(!parsePlacement(bad).has_value(), bad);
  // A trim for every reader: spaces and tabs off both ends.
  CHECK(trimmed(" \tShard(0) \t") == "Shard(0)");
  CHECK(trimmed("  ").empty());
}

}  // namespace irc::test
