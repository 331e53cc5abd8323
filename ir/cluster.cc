#include "ir/cluster.h"

#include <algorithm>

namespace irc {

std::string_view dispatchName(Dispatch d) { return d == Dispatch::Eager ? "eager" : "graph"; }

std::optional<Dispatch> parseDispatch(std::string_view s) {
  if (s == "eager") return Dispatch::Eager;
  if (s == "graph") return Dispatch::Graph;
  return std::nullopt;
}

double ClusterDescription::nicBandwidthPerDevice() const {
  return static_cast<double>(nicsPerNode) * nicGbps * 1e9 / 8 / static_cast<double>(std::max<int64_t>(1, devicesPerNode));
}

}  // namespace irc
