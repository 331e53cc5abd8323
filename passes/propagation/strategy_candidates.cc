#include "passes/propagation/strategy_candidates.h"

#include <functional>
#include <vector>

namespace irc {
namespace {

std::vector<int64_t> divisorsDescending(int64_t n) {
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d != n / d) high.push_back(n / d);
    }
  high.insert(high.end(), low.rbegin(), low.rend());
  return high;
}

}  // namespace

std::vector<OpSharding> candidateShardings(const OpRule& rule, const OpView& op, int64_t deviceNum, bool fullyUseDevices) {
  std::vector<OpSharding> out;
  std::vector<int64_t> splits(rule.factorCount(), 1);
  const std::vector<int>& order = rule.mindsporeOrder;
  std::function<void(size_t, int64_t)> visit = [&](size_t i, int64_t budget) {
    if (i == order.size()) {
      int64_t used = deviceNum / budget;
      if (fullyUseDevices && used != 1 && used != deviceNum) return;
      // Express the candidate as the op's shard strategy and let the op's own checks decide.
      OpSharding probe;
      probe.mesh = DeviceMatrix::unnamed({});
      std::vector<int64_t> dev;
      for (int f : order) dev.push_back(splits[f]);
      probe.mesh = DeviceMatrix::unnamed(dev);
      probe.factorAxes.assign(rule.factorCount(), {});
      for (size_t k = 0; k < order.size(); ++k) probe.factorAxes[order[k]] = {static_cast<int>(k)};
      ShardingResult r = shardingFromStrategy(rule, op, strategyOf(rule, probe, op), deviceNum);
      if (auto* s = std::get_if<OpSharding>(&r)) out.push_back(*s);
      return;
    }
    int f = order[i];
    // Every divisor of the devices left, largest first: on a power of two these are MindSpore's
    // powers of two; on 192 = 24 x 8 devices a 24-way data split is a candidate too.
    for (int64_t s : divisorsDescending(budget)) {
      if (!splitsEvenly(rule.factorSizes[f], s)) continue;
      if (rule.isReplicated(f) && s > 1) continue;
      splits[f] = s;
      visit(i + 1, budget / s);
    }
    splits[f] = 1;
  };
  visit(0, deviceNum);
  return out;
}

}  // namespace irc
