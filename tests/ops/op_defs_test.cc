// ir/op_defs.h: findOpDef's index finds every op type, and nothing else.
#include <doctest/doctest.h>

#include "ops/op_defs.h"

namespace irc::test {
namespace {

const OpDef* linearFind(std::string_view type) {
  for (const OpDef& d : allOpDefs())
    if (d.type == type) return &d;
  return nullptr;
}

}  // namespace

TEST_CASE("findOpDef finds every defined op type and no other name") {
  for (const OpDef& d : allOpDefs()) {
    CAPTURE(d.type);
    CHECK(findOpDef(d.type) == &d);
    // Near misses: what the index says is what a scan of the table says.
    for (std::string near : {d.type + "x", d.type.substr(0, d.type.size() - 1), d.type.substr(1), "_" + d.type}) {
      CAPTURE(near);
      CHECK(findOpDef(near) == linearFind(near));
    }
  }
  CHECK(findOpDef("") == nullptr);
  CHECK(findOpDef("matmul") == nullptr);  // names are case-sensitive
  CHECK(findOpDef("MatMul")->type == "MatMul");
}

}  // namespace irc::test
