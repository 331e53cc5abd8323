// `irc layout`: text and JSON forms, the seed examples, and its errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace irc::test {

TEST_CASE("--json echoes MindSpore's derived device matrix and map for a repeated strategy") {
  RunResult r = runIrc({"layout", "--strategy", "2,1", "--device-num", "8", "--json"});
  REQUIRE(r.exitCode == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["device_matrix"] == nlohmann::json({2, 1, 4}));
  CHECK(j["tensor_map"] == nlohmann::json({2, 1}));
  CHECK(j["shape"] == nlohmann::json({2, 1}));
  CHECK(j["ranks"][3]["replica_group"] == nlohmann::json({0, 1, 2, 3}));
  CHECK(j["ranks"][4]["slice"] == nlohmann::json({{1, 2}, {0, 1}}));
}

TEST_CASE("JSON has spec/cli.md's keys in order, every notation and every rank") {
  RunResult r =
      runIrc({"layout", "--device-matrix", "2,4", "--alias", "dp,mp", "--tensor-map", "dp,mp", "--shape", "4,8", "--json"});
  REQUIRE(r.exitCode == 0);
  CHECK(r.out.rfind(
            R"J({"device_matrix":[2,4],"alias_name":["dp","mp"],"shape":[4,8],"tensor_map":[1,0],"partial":[],)J"
            R"J("notations":{"layout":"(dp, mp)","strategy":"(2, 4)","sbp":"(S(0), S(1))","placements":"(Shard(0), Shard(1))",)J"
            R"J("dims_mapping":"[0, 1]","tensor_map":"[1, 0]"},"slice_shape":[2,2],)J"
            R"J("ranks":[{"rank":0,"coord":[0,0],"shard":0,"slice":[[0,2],[0,2]],"replica_group":[0]},)J",
            0) == 0);
}

TEST_CASE("text form: notations, table and mesh picture") {
  RunResult r = runIrc({"layout", "--device-matrix", "2,2", "--sbp", "S(1),B", "--shape", "4,4"});
  REQUIRE(r.exitCode == 0);
  CHECK(r.out.find("layout         (None, axis_0)\n") != std::string::npos);
  CHECK(r.out.find("slice shape    (4, 2)\n") != std::string::npos);
  CHECK(r.out.find("    3  [1, 1]             1  [0:4, 2:4]               [2, 3]\n") != std::string::npos);
  CHECK(r.out.find("mesh (rank:shard; rows axis_0, columns axis_1)\n          0     1\n    0 r0:s0 r1:s0\n    1 r2:s1 r3:s1\n") !=
        std::string::npos);
}

TEST_CASE("a mesh of rank 3 is drawn as one grid per leading coordinate") {
  RunResult r = runIrc({"layout", "--device-matrix", "2,2,2", "--sbp", "S(1),B,S(0)"});
  REQUIRE(r.exitCode == 0);
  CHECK(r.out.find("axis_0=1:\n          0     1\n    0 r4:s1 r5:s3\n    1 r6:s1 r7:s3\n") != std::string::npos);
  CHECK(r.out.find("\033[") == std::string::npos);  // no colour off a terminal
}

TEST_CASE("multi-axis tensor maps on the command line") {
  RunResult r = runIrc({"layout", "--device-matrix", "2,4", "--alias", "dp,mp", "--tensor-map", "(mp,dp),None", "--json"});
  REQUIRE(r.exitCode == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["tensor_map"] == nlohmann::json::parse("[[0, 1], -1]"));
  CHECK(j["notations"]["sbp"].is_null());
}

TEST_CASE("layout errors: bad layouts exit 1, bad flags exit 2") {
  RunResult uneven = runIrc({"layout", "--device-matrix", "8", "--tensor-map", "axis_0", "--shape", "12"});
  CHECK(uneven.exitCode == 1);
  CHECK(uneven.err ==
        "irc layout: error: dim 0 of 'the tensor' (size 12) cannot be split 8 ways; split counts that divide it: 1, 2, 3, 4, 6, "
        "12\n");
  RunResult alias = runIrc({"layout", "--device-matrix", "2,4", "--alias", "dp,mp", "--tensor-map", "dq,None"});
  CHECK(alias.exitCode == 1);
  CHECK(alias.err ==
        "irc layout: error: --tensor-map entry 0: unknown device axis 'dq' (alias_name has: dp, mp); did you mean 'dp'?\n");
  CHECK(runIrc({"layout", "--tensor-map", "dp"}).exitCode == 2);
  CHECK(runIrc({"layout", "--device-matrix", "2", "--sbp", "B", "--placements", "Replicate()"}).exitCode == 2);
}

}  // namespace irc::test
