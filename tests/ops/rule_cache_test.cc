// RuleCache: a memoized ruleOf must give every op exactly the rule ruleOf computes, telling
// apart ops that differ only in an attribute, a constant operand or a dtype.
#include <doctest/doctest.h>

#include "ops/op_rule.h"
#include "tests/model_util.h"

namespace irc::test {
namespace {

std::string describe(const std::optional<OpRule>& rule) {
  if (!rule) return "none";
  std::string text = rule->print() + " order:";
  for (int f : rule->mindsporeOrder) text += " " + std::to_string(f);
  return text + " reduce:" + std::to_string(static_cast<int>(rule->reduceOp));
}

}  // namespace

TEST_CASE("RuleCache gives each op ruleOf's rule, also for ops alike but for an attribute or constant") {
  Graph g = parseModel(R"(parallel: {device_num: 8}
inputs:
  - {name: x, shape: [4, 4], dtype: float32}
  - {name: h, shape: [4, 4], dtype: float16}
parameters:
  - {name: w, shape: [4, 4], dtype: float32}
  - {name: w16, shape: [4, 4], dtype: float16}
ops:
  - {name: a, type: MatMul, inputs: [x, w]}
  - {name: b, type: MatMul, inputs: [x, w], attrs: {transpose_b: true}}
  - {name: c, type: MatMul, inputs: [a, w]}
  - {name: d, type: MatMul, inputs: [h, w16], attrs: {transpose_b: true}}
  - {name: s1, type: ReduceSum, inputs: [c, [0]]}
  - {name: s2, type: ReduceSum, inputs: [c, [1]]}
  - {name: s3, type: ReduceSum, inputs: [b, [1]]}
)");
  RuleCache cache;
  std::vector<std::string> cached;
  for (OpId id : g.order) {
    const Op& op = g.op(id);
    std::string expected = describe(ruleOf(g, op));
    CHECK_MESSAGE(describe(cache.ruleOf(g, op)) == expected, op.name);
    cached.push_back(expected);
  }
  // The cases that must not share a rule do differ, so the check above can fail.
  CHECK(cached[0] != cached[1]);  // transpose_b
  CHECK(cached[0] == cached[2]);  // same shapes and attrs: one entry
  CHECK(cached[4] != cached[5]);  // the reduced axis, a constant operand
}

}  // namespace irc::test
