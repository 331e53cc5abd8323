#pragma once
// The sharding rule of an op in Shardy's factor notation (spec/ops.md; OpenXLA Shardy's design): factors with
// sizes, and for every tensor operand and result, per dim the factors it is made of (major to
// minor; several for a reshape's merged dims, none for a size-1 dim that broadcasts or is
// inserted). A factor is pass-through, a reduction (splitting it leaves the results partial) or
// replicated (may not be split). `mindsporeOrder` lists the factors in the order of MindSpore's
// device matrix for the op (MatMul: [m, k, n]; Shardy's own order is [m, n, k]).
#include <cstdint>
#include <string>
#include <vector>

#include "ir/sharding.h"

namespace irc {

enum class FactorKind { PassThrough, Reduction, Replicated };

using DimFactors = std::vector<std::vector<int>>;  // per tensor dim, factor indices major first

struct OpRule {
  std::vector<int64_t> factorSizes;
  std::vector<FactorKind> factorKinds;
  std::vector<DimFactors> operands;  // one per tensor (value) operand, in operand order
  std::vector<DimFactors> results;
  std::vector<int> mindsporeOrder;    // a permutation of the factor indices
  ReduceOp reduceOp = ReduceOp::Sum;  // how partial results combine
  // Replicated factors the op reads at positions its indices give (a permutation's tokens and
  // choices): they add no iteration points, as a lookup's table rows do not (its work is per
  // element it writes, not per element it could read).
  std::vector<int> readByIndex;
  // The fraction of the iteration space the kernel visits: 1, or a sliding window's band of the
  // attention scores (BatchMatMul's `window`).
  double pointsVisited = 1;

  int factorCount() const { return static_cast<int>(factorSizes.size()); }
  bool isReduction(int f) const { return factorKinds[f] == FactorKind::Reduction; }
  bool isReplicated(int f) const { return factorKinds[f] == FactorKind::Replicated; }
  // `([i, k], [k, j])->([i, j]) reduction={k}`; compound dims print `(ij)`, size-1 dims `[]`.
  std::string print() const;
};

// Factor letters: i, j, k, l, ... then f14, f15, ...
std::string factorName(int f);

}  // namespace irc
