// OpFamilyRules::modulePart: which part of a torch Linear or Embedding each op can play, the
// operand indices DTensor's styles (frontends/yaml/plan_modules.cc) shard by.
#include <doctest/doctest.h>

#include "ops/op_defs.h"
#include "ops/op_family.h"

namespace irc::test {
namespace {

ModulePart partOf(const std::string& type, AttrMap attrs = {}) {
  Op op;
  op.type = type;
  for (const AttrSpec& a : findOpDef(type)->attrs)
    if (!attrs.count(a.name) && a.defaultValue) attrs[a.name] = *a.defaultValue;
  op.attrs = attrs;
  return rulesOf(op).modulePart(op);
}

}  // namespace

TEST_CASE("modulePart: products, lookups, bias and scale; everything else plays none") {
  using Kind = ModulePart::Kind;
  for (const char* type : {"MatMul", "BatchMatMul"}) {
    CAPTURE(type);
    ModulePart plain = partOf(type);
    CHECK(plain.kind == Kind::Product);
    CHECK(plain.input == 0);
    CHECK(plain.weight == 1);
    CHECK_FALSE(plain.weightTransposed);
    // Gemm's transB: torch's [out, in] weight.
    CHECK(partOf(type, {{"transpose_b", true}}).weightTransposed);
    // A transposed activation is no Linear's.
    CHECK(partOf(type, {{"transpose_a", true}}).kind == Kind::None);
  }
  ModulePart lookup = partOf("Gather");
  CHECK(lookup.kind == Kind::Lookup);
  CHECK(lookup.input == 1);   // the indices
  CHECK(lookup.weight == 0);  // the table
  CHECK(partOf("Add").kind == Kind::Bias);
  CHECK(partOf("Add").weight == 1);
  CHECK(partOf("Mul").kind == Kind::Scale);
  for (const char* type : {"Sub", "RealDiv", "Select", "BiasAdd", "Softmax", "Reshape", "LayerNorm"}) {
    CAPTURE(type);
    CHECK(partOf(type).kind == Kind::None);
  }
}

}  // namespace irc::test
