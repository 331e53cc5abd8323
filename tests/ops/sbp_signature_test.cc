// Seed 002's 2-D SBP signature: on a 2 x 2 mesh, x (B, S(0)) and w (S(1), B) give y (S(1), S(0)),
// derived per mesh axis independently, with no communication.
#include <doctest/doctest.h>

#include "ir/layout_notation.h"
#include "tests/pipeline_util.h"

namespace irc::test {

TEST_CASE("seed 002: (B, S(0)) x (S(1), B) = (S(1), S(0))") {
  std::string yaml =
      "parallel: {device_num: 4, search_mode: factor_propagation, device_matrix: [2, 2], alias_name: [group, device]}\n"
      "inputs:\n  - {name: x, shape: [4, 8], dtype: float32, sharding: {sbp: [B, S(0)]}}\n"
      "parameters:\n  - {name: w, shape: [8, 6], dtype: float32, sharding: {sbp: [S(1), B]}}\n"
      "ops:\n  - {name: y, type: MatMul, inputs: [x, w]}\n";
  Compiled c = compileAllRanks(yaml);
  REQUIRE(c.errors == "");
  const Op& y = c.global.op(c.global.value(*c.global.findValue("y")).producer);
  CHECK(*printSbp(y.parallel->outputLayouts[0]) == "(S(1), S(0))");
  CHECK(y.parallel->forwardOps.empty());
  CHECK(c.global.redistributions.empty());
  CHECK(verifyCompiled(c).ok);
}

}  // namespace irc::test
