#include <doctest/doctest.h>

#include "ops/op_defs.h"
#include "ops/op_traits.h"

namespace irc::test {

TEST_CASE("op traits: each kind the training plan asks about, by type, and nothing else") {
  auto ofType = [](const char* type) {
    Op op;
    op.type = type;
    return op;
  };
  CHECK(isNorm(ofType("LayerNorm")));
  CHECK(isNorm(ofType("RmsNorm")));
  CHECK_FALSE(isNorm(ofType("Softmax")));
  CHECK(isAdd(ofType("Add")));
  CHECK_FALSE(isAdd(ofType("AddN")));
  CHECK(isProduct(ofType("MatMul")));
  CHECK_FALSE(isProduct(ofType("BatchMatMul")));
  CHECK(isBatchedProduct(ofType("BatchMatMul")));
  CHECK_FALSE(isBatchedProduct(ofType("MatMul")));
  CHECK(isLookup(ofType("Gather")));
  CHECK_FALSE(isLookup(ofType("GatherElements")));
  CHECK(isExpertRouting(ofType("MoeDispatch")));
  CHECK(isExpertRouting(ofType("MoeCombine")));
  CHECK_FALSE(isExpertRouting(ofType("TopK")));
}

}  // namespace irc::test
