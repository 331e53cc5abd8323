#pragma once
// Shardy's factor algorithm on plain structs (spec/parallel-semantics.md §6), with no graph and
// no YAML, so that each stage is unit-tested on its own:
//   - projection: a tensor dim's mesh axes handed to the dim's factors, major to minor;
//   - stage A: the longest compatible major prefix of the lists the tensors hold for a factor;
//   - the two per-step strategies over one problem: basic (one list per factor, any conflict
//     truncates it for every tensor) and aggressive (per tensor; factors visited by source size);
//   - the read-off of an op's factor shardings from its tensors, conflicts and cross-factor
//     clashes ranked by the total size of the tensors carrying each candidate.
// The graph walk (passes/propagation/factor_propagation.cc) builds a FactorProblem per op and step.
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

namespace irc {

// One dim of a tensor's sharding: its mesh axes, major first.
struct DimSharding {
  std::vector<int> axes;
  bool open = true;     // may propagation add axes
  bool frozen = false;  // a lower user priority not yet restored: empty and closed for now
  int64_t priority = 0;
};

// One tensor of an op as the algorithm sees it: per dim its factors (from the op's rule) and its
// sharding, plus the axes it holds as partial or may never be split over.
struct FactorTensor {
  std::vector<std::vector<int>> dimFactors;  // per dim, factor indices major first
  std::vector<DimSharding> dims;
  std::vector<int> partial;
  std::set<int> barred;
  int64_t elements = 1;
};

struct FactorProblem {
  std::vector<int64_t> meshDims;
  std::vector<int64_t> factorSizes;
  std::vector<bool> allowed;          // per factor: may it propagate in this step
  std::vector<bool> replicated;       // per factor: may never be split
  bool elementwise = false;           // for the aggressive order's second key
  std::vector<FactorTensor> tensors;  // the op's operands, then its results
};

// How one dim's axes split among its factors: each factor, major first, takes axes while what
// is left of its size is above 1 and divisible by the next axis (size-1 axes pass through
// unrecorded); a minor factor gets axes only once the major one is used up. `blocked[f]` factors
// take none and stop the dim. Returns per factor of `factors` its axes.
std::vector<std::vector<int>> projectDim(const std::vector<int>& factors, const std::vector<int64_t>& factorSizes,
                                         const std::vector<int>& axes, const std::vector<int64_t>& meshDims,
                                         const std::vector<bool>* blocked = nullptr);

// The axes tensor `t` holds for factor `f` (empty on a frozen dim), nullopt when it has no dim
// made of `f`.
std::optional<std::vector<int>> factorAxesOf(const FactorProblem& p, size_t t, int f);

// Stage A: fold over the lists, keep equal axes, stop at the first different one; with no
// conflict the longer list wins. ([a], [], [a,b,c], [a,b,d] -> [a,b])
std::vector<int> longestCompatiblePrefix(const std::vector<std::vector<int>>& lists);

// One propagation step on the op; each returns the indices of the tensors it changed.
std::vector<size_t> propagateBasic(FactorProblem& p);
std::vector<size_t> propagateAggressive(FactorProblem& p);

// The op's sharding read off its tensors: per factor its axes. Every (factor, axes) a tensor
// carries is a candidate scored by the total elements of the tensors carrying it; candidates of
// all factors are ranked together (score, then the lower first carrier, then the lower factor)
// and accepted greedily, skipping a factor already decided, an axis already taken and
// replicated factors.
std::vector<std::vector<int>> resolveFactorShardings(const FactorProblem& p);

}  // namespace irc
