#include "ops/activation_patterns.h"

#include <cmath>
#include <optional>

namespace irc {
namespace {

class Matcher {
 public:
  Matcher(Graph& g, std::vector<bool>& erase) : g_(g), erase_(erase), uses_(computeUses(g)), isOutput_(g.values.size(), false) {
    for (ValueId v : g.outputs) isOutput_[v] = true;
  }

  int run() {
    int fused = 0;
    for (OpId id : g_.order) {
      if (erase_[id]) continue;
      const std::string& type = g_.op(id).type;
      if (type == "Sigmoid" ? fuseSiLU(id) : type == "Erf" && fuseGeLU(id)) ++fused;
    }
    return fused;
  }

 private:
  // The one op reading `v`, where nothing else does and the graph does not return it.
  std::optional<OpId> soleReader(ValueId v) const {
    if (isOutput_[v] || uses_[v].size() != 1 || erase_[uses_[v][0].op]) return std::nullopt;
    return uses_[v][0].op;
  }
  const Op& op(OpId id) const { return g_.op(id); }
  // A two-operand op of `type` reading `v` and, as its other operand, the constant `c`.
  bool isWithConstant(OpId id, const std::string& type, ValueId v, double c) const {
    const Op& o = op(id);
    if (o.type != type || o.operands.size() != 2) return false;
    for (int i : {0, 1})
      if (o.operands[i].value == v && isScalar(o.operands[1 - i], c)) return true;
    return false;
  }
  static bool isScalar(const Operand& operand, double c) {
    if (operand.isValue() || !operand.constant) return false;
    const auto* s = std::get_if<ScalarTensor>(&*operand.constant);
    return s && std::fabs(s->value - c) <= 1e-6 * std::fabs(c);
  }
  // The operand of a Mul other than `v` (kNoId when `v` is not one of its two value operands).
  ValueId otherFactor(OpId id, ValueId v) const {
    const Op& o = op(id);
    if (o.type != "Mul" || o.operands.size() != 2 || !o.operands[0].isValue() || !o.operands[1].isValue()) return kNoId;
    if (o.operands[0].value == v) return o.operands[1].value;
    if (o.operands[1].value == v) return o.operands[0].value;
    return kNoId;
  }
  // `last` becomes `type`(x); `steps` go.
  void fuse(OpId last, const std::string& type, ValueId x, std::initializer_list<OpId> steps) {
    Op& o = g_.op(last);
    o.type = type;
    o.operands = {Operand::ofValue(x, o.operands[0].loc)};
    o.attrs.clear();
    for (OpId s : steps) erase_[s] = true;
  }

  // x * Sigmoid(x), the factors either way round.
  bool fuseSiLU(OpId sigmoid) {
    if (!op(sigmoid).operands[0].isValue()) return false;
    ValueId x = op(sigmoid).operands[0].value, s = op(sigmoid).results[0];
    auto mul = soleReader(s);
    if (!mul || otherFactor(*mul, s) != x) return false;
    fuse(*mul, "SiLU", x, {sigmoid});
    return true;
  }

  // Erf(x / sqrt 2) or Erf(x * (1 / sqrt 2)), plus 1, times x and 0.5 in any association:
  // ((x * p) * 0.5), ((x * 0.5) * p), (x * (p * 0.5)).
  bool fuseGeLU(OpId erf) {
    if (!op(erf).operands[0].isValue()) return false;
    ValueId scaled = op(erf).operands[0].value;
    OpId scale = g_.value(scaled).producer;
    if (scale == kNoId || soleReader(scaled) != erf) return false;
    const Op& s = op(scale);
    if (!s.operands[0].isValue()) return false;
    ValueId x = s.operands[0].value;
    if (!isWithConstant(scale, "RealDiv", x, M_SQRT2) && !isWithConstant(scale, "Mul", x, M_SQRT1_2)) return false;
    auto plus = soleReader(op(erf).results[0]);
    if (!plus || !isWithConstant(*plus, "Add", op(erf).results[0], 1.0)) return false;
    ValueId p = op(*plus).results[0];
    auto times = soleReader(p);
    if (!times) return false;
    ValueId other = otherFactor(*times, p);
    if (other == x) {  // (x * p) * 0.5
      auto half = soleReader(op(*times).results[0]);
      if (!half || !isWithConstant(*half, "Mul", op(*times).results[0], 0.5)) return false;
      fuse(*half, "ExactGeLU", x, {scale, erf, *plus, *times});
      return true;
    }
    if (other != kNoId) {  // (x * 0.5) * p
      OpId halving = g_.value(other).producer;
      if (halving == kNoId || soleReader(other) != *times || !isWithConstant(halving, "Mul", x, 0.5)) return false;
      fuse(*times, "ExactGeLU", x, {scale, erf, *plus, halving});
      return true;
    }
    if (!isWithConstant(*times, "Mul", p, 0.5)) return false;  // x * (p * 0.5)
    ValueId halfP = op(*times).results[0];
    auto last = soleReader(halfP);
    if (!last || otherFactor(*last, halfP) != x) return false;
    fuse(*last, "ExactGeLU", x, {scale, erf, *plus, *times});
    return true;
  }

  Graph& g_;
  std::vector<bool>& erase_;
  std::vector<std::vector<Use>> uses_;
  std::vector<bool> isOutput_;
};

}  // namespace

int fuseWrittenOutActivations(Graph& graph, std::vector<bool>& erase) { return Matcher(graph, erase).run(); }

}  // namespace irc
