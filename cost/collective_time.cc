#include "cost/collective_time.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

namespace irc {

GroupSpan groupSpan(const DeviceMatrix& mesh, const std::vector<int>& axes, int64_t devicesPerNode) {
  // Layers repeat: a mesh has few axis sets, each asked for many times.
  static std::mutex lock;
  static std::map<std::tuple<std::vector<int64_t>, std::vector<int>, int64_t>, GroupSpan> known;
  auto key = std::make_tuple(mesh.dims, axes, devicesPerNode);
  {
    std::lock_guard<std::mutex> guard(lock);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  std::vector<int64_t> ranks = groupAlongAxes(mesh, 0, axes);
  std::set<int64_t> nodes;
  for (int64_t r : ranks) nodes.insert(r / std::max<int64_t>(1, devicesPerNode));
  GroupSpan span{static_cast<int64_t>(ranks.size()), static_cast<int64_t>(nodes.size())};
  std::lock_guard<std::mutex> guard(lock);
  known.emplace(std::move(key), span);
  return span;
}

GroupSpan pairSpan(int64_t distance, int64_t devicesPerNode) {
  return {2, distance >= std::max<int64_t>(1, devicesPerNode) ? 2 : 1};
}

namespace {

// The bus bandwidth a group's ring runs at: the intra-node (NVLink-domain) link within one,
// else the slower of it and the NICs of the group's ranks on each node.
double busBandwidthOf(const GroupSpan& span, const ClusterDescription& c) {
  double intra = c.intraNodeBandwidth * c.intraNodeEfficiency;
  if (span.nodes <= 1) return intra;
  int64_t perNode = std::max<int64_t>(1, span.ranksPerNode());
  return std::min(intra, static_cast<double>(perNode) * c.nicBandwidthPerDevice() * c.interNodeEfficiency);
}

}  // namespace

LinkShare linkOf(const GroupSpan& span, const ClusterDescription& c) {
  double intra = c.intraNodeBandwidth * c.intraNodeEfficiency;
  // An NVLink domain wider than a node (an NVL72 rack) is what `span.nodes` counts.
  const bool domain = c.nvlinkDomain > 0;
  if (span.nodes <= 1)
    return {intra, c.intraNodeLatency,
            domain ? fmt::format("NVLink within one {}-GPU domain ({:.0f} GB/s bus bandwidth)", c.nvlinkDomain, intra / 1e9)
                   : fmt::format("the intra-node link within one node ({:.0f} GB/s bus bandwidth)", intra / 1e9)};
  int64_t perNode = std::max<int64_t>(1, span.ranksPerNode());
  double bus = busBandwidthOf(span, c);
  return {
      bus, c.interNodeLatency,
      fmt::format("the network across {} {}, {} rank{} per {} ({:.0f} GB/s bus bandwidth)", span.nodes,
                  domain ? "NVLink domains" : "nodes", perNode, perNode == 1 ? "" : "s", domain ? "domain" : "node", bus / 1e9)};
}

double collectiveSeconds(CollectiveKind kind, double localBytes, const GroupSpan& span, const ClusterDescription& c) {
  double n = static_cast<double>(span.ranks);
  if (kind != CollectiveKind::PointToPoint && n <= 1) return 0;
  // (The bandwidth alone: the link's description is formatted for the explanations, not here.)
  const double bus = busBandwidthOf(span, c);
  // Latency: ring steps within a node, tree levels between nodes (NCCL switches to trees at scale).
  double perNode = static_cast<double>(std::max<int64_t>(1, span.ranksPerNode()));
  double k = static_cast<double>(span.nodes);
  double hops = (perNode - 1) * c.intraNodeLatency + (k > 1 ? std::min(k - 1, std::ceil(std::log2(k))) * c.interNodeLatency : 0);
  if (kind == CollectiveKind::PointToPoint) {
    if (span.nodes > 1) return localBytes / (c.nicBandwidthPerDevice() * c.interNodeEfficiency) + c.interNodeLatency;
    return localBytes / (c.intraNodeBandwidth * c.intraNodeEfficiency) + c.intraNodeLatency;
  }
  return ringTraffic(kind, n) * localBytes / bus + ringPasses(kind) * hops;
}

double gradientReductionSeconds(double bytes, double elementBytes, const GroupSpan& span, const ClusterDescription& c) {
  if (span.ranks <= 1 || bytes <= 0) return 0;
  double bucketBytes =
      std::max(kGradientBucketElements, kGradientBucketElementsPerReplica * static_cast<double>(span.ranks)) * elementBytes;
  double buckets = std::max(1.0, std::ceil(bytes / bucketBytes));
  return buckets * collectiveSeconds(CollectiveKind::AllReduce, bytes / buckets, span, c);
}

}  // namespace irc
