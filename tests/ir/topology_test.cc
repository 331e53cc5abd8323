#include <doctest/doctest.h>

#include "ir/topology.h"
#include "ops/verifier.h"
#include "tests/model_util.h"

namespace irc::test {

TEST_CASE("ops listed before their producers are ordered producers first, else model order") {
  Graph g =
      parseModel(model("inputs:\n  - {name: x, shape: [4], dtype: float32}\nops:\n"
                       "  - {name: c, type: Tanh, inputs: [b]}\n"
                       "  - {name: a, type: ReLU, inputs: [x]}\n"
                       "  - {name: b, type: Exp, inputs: [a]}\n"
                       "  - {name: d, type: Neg, inputs: [x]}\n"));
  std::vector<std::string> names;
  for (OpId id : g.order) names.push_back(g.op(id).name);
  CHECK(names == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(verifyGraph(g).empty());
}

TEST_CASE("a cycle is reported with its ops") {
  std::string err =
      modelErrors(model("inputs:\n  - {name: x, shape: [4], dtype: float32}\nops:\n"
                        "  - {name: a, type: Add, inputs: [x, b]}\n"
                        "  - {name: b, type: ReLU, inputs: [a]}\n"
                        "  - {name: c, type: ReLU, inputs: [c]}\n"));
  CHECK(err.find("the ops 'a', 'b' form a cycle") != std::string::npos);
}

TEST_CASE("the verifier catches a result type that disagrees with inference") {
  Graph g =
      parseModel(model("inputs:\n  - {name: x, shape: [4, 2], dtype: float32}\nops:\n"
                       "  - {name: t, type: Transpose, inputs: [x, [1, 0]]}\n"));
  g.value(g.op(0).results[0]).type.shape = {4, 2};
  auto problems = verifyGraph(g);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0] == "op 't' result 0 has type float32 (4, 2), shape inference gives float32 (2, 4)");
}

}  // namespace irc::test
