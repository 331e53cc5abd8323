#include "passes/propagation/factor_sharding.h"

#include <algorithm>
#include <tuple>

#include "ir/tensor_layout.h"

namespace irc {
namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

bool isStrictPrefix(const std::vector<int>& shorter, const std::vector<int>& longer) {
  return shorter.size() < longer.size() && std::equal(shorter.begin(), shorter.end(), longer.begin());
}

// The dim of tensor t made of factor f, or -1.
int dimOf(const FactorTensor& t, int f) {
  for (size_t d = 0; d < t.dimFactors.size(); ++d)
    if (contains(t.dimFactors[d], f)) return static_cast<int>(d);
  return -1;
}

// Cuts `candidate` where a factor's size stops being divisible by the next axis.
std::vector<int> cutAtDivisibility(const FactorProblem& p, int f, std::vector<int> candidate) {
  int64_t left = p.factorSizes[f];
  size_t keep = 0;
  for (; keep < candidate.size(); ++keep) {
    int64_t n = p.meshDims[candidate[keep]];
    if (!splitsEvenly(left, n)) break;
    left /= n;
  }
  candidate.resize(keep);
  return candidate;
}

// How far tensor t can take `candidate` for factor f, given what it holds now: from the length of
// its current list up to the first axis it uses for another factor, holds as partial or bars.
// A closed or frozen dim, or a minor factor of a merged dim whose major factors are not fully
// split, takes nothing more.
size_t reachOf(const FactorProblem& p, size_t t, int f, const std::vector<int>& current, const std::vector<int>& candidate) {
  const FactorTensor& ts = p.tensors[t];
  int d = dimOf(ts, f);
  const DimSharding& dim = ts.dims[d];
  if (!dim.open || dim.frozen) return current.size();
  const std::vector<int>& factors = ts.dimFactors[d];
  if (factors.front() != f) {
    int64_t reached = 1, majors = 1;
    for (int a : dim.axes) reached *= p.meshDims[a];
    for (int g : factors) {
      if (g == f) break;
      majors *= p.factorSizes[g];
    }
    if (reached < majors) return current.size();
  }
  std::set<int> usedByOthers;
  for (size_t e = 0; e < ts.dims.size(); ++e)
    for (int g : ts.dimFactors[e])
      if (g != f)
        if (auto axes = factorAxesOf(p, t, g)) usedByOthers.insert(axes->begin(), axes->end());
  size_t reach = current.size();
  while (reach < candidate.size()) {
    int a = candidate[reach];
    if (usedByOthers.count(a) || contains(ts.partial, a) || ts.barred.count(a)) break;
    ++reach;
  }
  return reach;
}

// Rewrites tensor t's dim holding f from its factors, major first, with f's new axes.
void writeFactor(FactorProblem& p, size_t t, int f, const std::vector<int>& axes) {
  FactorTensor& ts = p.tensors[t];
  int d = dimOf(ts, f);
  std::vector<int> all;
  for (int g : ts.dimFactors[d]) {
    auto mine = g == f ? std::optional(axes) : factorAxesOf(p, t, g);
    if (mine) all.insert(all.end(), mine->begin(), mine->end());
  }
  ts.dims[d].axes = all;
}

// The tensors holding factor f with their current lists.
std::vector<std::pair<size_t, std::vector<int>>> holdersOf(const FactorProblem& p, int f) {
  std::vector<std::pair<size_t, std::vector<int>>> holders;
  for (size_t t = 0; t < p.tensors.size(); ++t)
    if (auto axes = factorAxesOf(p, t, f)) holders.emplace_back(t, *axes);
  return holders;
}

std::vector<int> stageA(const std::vector<std::pair<size_t, std::vector<int>>>& holders) {
  std::vector<std::vector<int>> lists;
  for (const auto& h : holders) lists.push_back(h.second);
  return longestCompatiblePrefix(lists);
}

void noteChanged(std::vector<size_t>& changed, size_t t) {
  if (!std::count(changed.begin(), changed.end(), t)) changed.push_back(t);
}

}  // namespace

std::vector<std::vector<int>> projectDim(const std::vector<int>& factors, const std::vector<int64_t>& factorSizes,
                                         const std::vector<int>& axes, const std::vector<int64_t>& meshDims,
                                         const std::vector<bool>* blocked) {
  std::vector<std::vector<int>> out(factors.size());
  size_t a = 0;
  for (size_t i = 0; i < factors.size(); ++i) {
    int f = factors[i];
    int64_t left = factorSizes[f];
    bool takes = !(blocked && (*blocked)[f]);
    while (takes && a < axes.size() && left > 1 && left % meshDims[axes[a]] == 0) {
      left /= meshDims[axes[a]];
      if (meshDims[axes[a]] > 1) out[i].push_back(axes[a]);
      ++a;
    }
    while (a < axes.size() && meshDims[axes[a]] == 1) ++a;
    if (a < axes.size() && left > 1) break;  // the next axis does not fit this factor: no sub-axes
  }
  return out;
}

std::optional<std::vector<int>> factorAxesOf(const FactorProblem& p, size_t t, int f) {
  const FactorTensor& ts = p.tensors[t];
  int d = dimOf(ts, f);
  if (d < 0) return std::nullopt;
  if (ts.dims[d].frozen) return std::vector<int>{};
  const std::vector<int>& factors = ts.dimFactors[d];
  auto perFactor = projectDim(factors, p.factorSizes, ts.dims[d].axes, p.meshDims);
  return perFactor[std::find(factors.begin(), factors.end(), f) - factors.begin()];
}

std::vector<int> longestCompatiblePrefix(const std::vector<std::vector<int>>& lists) {
  std::vector<int> result;
  for (const auto& axes : lists) {
    size_t n = 0;
    while (n < axes.size() && n < result.size() && axes[n] == result[n]) ++n;
    if (n < axes.size() && n < result.size()) result.resize(n);  // they diverge: keep the common prefix
    else if (axes.size() > result.size()) result = axes;
  }
  return result;
}

std::vector<size_t> propagateBasic(FactorProblem& p) {
  std::vector<size_t> changed;
  int factors = static_cast<int>(p.factorSizes.size());
  for (int f = 0; f < factors; ++f) {
    if (!p.allowed[f] || p.replicated[f]) continue;
    auto holders = holdersOf(p, f);
    if (holders.empty()) continue;
    std::vector<int> result = cutAtDivisibility(p, f, stageA(holders));
    // Stage B, for all tensors at once: an axis another factor of any tensor uses, or that any
    // tensor holds as partial, ends the list.
    std::set<int> blocked;
    for (size_t t = 0; t < p.tensors.size(); ++t) {
      blocked.insert(p.tensors[t].partial.begin(), p.tensors[t].partial.end());
      for (int g = 0; g < factors; ++g)
        if (g != f)
          if (auto axes = factorAxesOf(p, t, g)) blocked.insert(axes->begin(), axes->end());
    }
    size_t keep = 0;
    while (keep < result.size() && !blocked.count(result[keep])) ++keep;
    result.resize(keep);
    // A holder that would have to grow but cannot (closed dim, barred axis) stops it for all.
    for (const auto& [t, axes] : holders)
      if (isStrictPrefix(axes, result)) result.resize(std::max(axes.size(), reachOf(p, t, f, axes, result)));
    for (const auto& [t, axes] : holders) {
      auto now = factorAxesOf(p, t, f);
      if (!isStrictPrefix(*now, result)) continue;
      writeFactor(p, t, f, result);
      noteChanged(changed, t);
    }
  }
  return changed;
}

std::vector<size_t> propagateAggressive(FactorProblem& p) {
  struct Candidate {
    int factor;
    std::vector<int> axes;
    int64_t sourceSize;  // the largest tensor already holding it
    size_t sourceIndex;
  };
  std::vector<Candidate> candidates;
  int factors = static_cast<int>(p.factorSizes.size());
  for (int f = 0; f < factors; ++f) {
    if (!p.allowed[f] || p.replicated[f]) continue;
    auto holders = holdersOf(p, f);
    std::vector<int> axes = cutAtDivisibility(p, f, stageA(holders));
    if (axes.empty()) continue;
    Candidate c{f, axes, -1, 0};
    for (const auto& [t, held] : holders)
      if (held.size() >= axes.size() && std::equal(axes.begin(), axes.end(), held.begin()) &&
          p.tensors[t].elements > c.sourceSize) {
        c.sourceSize = p.tensors[t].elements;
        c.sourceIndex = t;
      }
    candidates.push_back(c);
  }
  // Larger source first; for elementwise ops more axes first; then the lower source tensor;
  // then the lower factor.
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    size_t axesA = p.elementwise ? a.axes.size() : 0, axesB = p.elementwise ? b.axes.size() : 0;
    return std::make_tuple(-a.sourceSize, -static_cast<int64_t>(axesA), a.sourceIndex, a.factor) <
           std::make_tuple(-b.sourceSize, -static_cast<int64_t>(axesB), b.sourceIndex, b.factor);
  });
  std::vector<size_t> changed;
  for (const Candidate& c : candidates)
    for (size_t t = 0; t < p.tensors.size(); ++t) {
      auto now = factorAxesOf(p, t, c.factor);
      if (!now || !isStrictPrefix(*now, c.axes)) continue;
      size_t reach = reachOf(p, t, c.factor, *now, c.axes);  // sees this step's earlier writes
      if (reach <= now->size()) continue;
      writeFactor(p, t, c.factor, std::vector<int>(c.axes.begin(), c.axes.begin() + reach));
      noteChanged(changed, t);
    }
  return changed;
}

std::vector<std::vector<int>> resolveFactorShardings(const FactorProblem& p) {
  struct Candidate {
    int factor;
    std::vector<int> axes;
    int64_t carried = 0;
    size_t firstCarrier = 0;
  };
  std::vector<Candidate> candidates;
  int factors = static_cast<int>(p.factorSizes.size());
  for (size_t t = 0; t < p.tensors.size(); ++t)
    for (int f = 0; f < factors; ++f) {
      if (p.replicated[f]) continue;
      auto axes = factorAxesOf(p, t, f);
      if (!axes || axes->empty()) continue;
      auto it = std::find_if(candidates.begin(), candidates.end(),
                             [&](const Candidate& c) { return c.factor == f && c.axes == *axes; });
      if (it == candidates.end()) candidates.push_back({f, *axes, p.tensors[t].elements, t});
      else it->carried += p.tensors[t].elements;
    }
  std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return std::make_tuple(-a.carried, a.firstCarrier, a.factor) < std::make_tuple(-b.carried, b.firstCarrier, b.factor);
  });
  std::vector<std::vector<int>> out(factors);
  std::vector<bool> decided(factors, false);
  std::set<int> taken;
  for (const Candidate& c : candidates) {
    if (decided[c.factor]) continue;
    if (std::any_of(c.axes.begin(), c.axes.end(), [&](int a) { return taken.count(a) > 0; })) continue;
    out[c.factor] = c.axes;
    decided[c.factor] = true;
    taken.insert(c.axes.begin(), c.axes.end());
  }
  return out;
}

}  // namespace irc
