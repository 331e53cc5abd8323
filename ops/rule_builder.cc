#include "ops/rule_builder.h"

#include "ops/shape_inference.h"

namespace irc::families {

std::vector<bool> namedDims(const Attribute& axisAttr, int64_t rank) {
  IntTuple axes;
  if (auto* i = std::get_if<int64_t>(&axisAttr)) axes = {*i};
  else axes = std::get<IntTuple>(axisAttr);
  std::vector<bool> named(rank, axes.empty());
  for (int64_t a : axes) named[*normalizeAxis(a, rank)] = true;
  return named;
}

OpRule sameShapeRule(const Shape& shape, const std::vector<bool>& replicated) {
  RuleBuilder b;
  std::vector<int> f;
  for (size_t d = 0; d < shape.size(); ++d)
    f.push_back(b.factor(shape[d], d < replicated.size() && replicated[d] ? FactorKind::Replicated : FactorKind::PassThrough));
  b.rule.operands = {single(f)};
  b.rule.results = {single(f)};
  return b.done();
}

OpRule keptDimsRule(const Shape& in, const Shape& out) {
  RuleBuilder b;
  DimFactors inDims, outDims;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == out[d]) {
      int f = b.factor(in[d]);
      inDims.push_back({f});
      outDims.push_back({f});
    } else {
      inDims.push_back({b.factor(in[d], FactorKind::Replicated)});
      outDims.push_back({b.factor(out[d], FactorKind::Replicated)});
    }
  }
  b.rule.operands = {inDims};
  b.rule.results = {outDims};
  return b.done();
}

}  // namespace irc::families
