#include "ir/topology.h"

#include <algorithm>
#include <functional>
#include <queue>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>

namespace irc {
namespace {

using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

BoostGraph buildDependencyGraph(const Graph& graph) {
  BoostGraph g(graph.ops.size());
  for (size_t consumer = 0; consumer < graph.ops.size(); ++consumer)
    for (const Operand& operand : graph.ops[consumer].operands)
      if (operand.isValue()) {
        OpId producer = graph.value(operand.value).producer;
        if (producer != kNoId) boost::add_edge(producer, consumer, g);
      }
  return g;
}

// The ops of the first (by smallest member id) non-trivial strongly connected component.
std::vector<OpId> findCycle(const BoostGraph& g) {
  std::vector<int> component(boost::num_vertices(g));
  int count = boost::strong_components(g, component.data());
  std::vector<std::vector<OpId>> members(count);
  for (size_t v = 0; v < component.size(); ++v) members[component[v]].push_back(static_cast<OpId>(v));
  std::vector<OpId> best;
  for (auto& m : members) {
    bool selfLoop = m.size() == 1 && boost::edge(m[0], m[0], g).second;
    if (m.size() < 2 && !selfLoop) continue;
    if (best.empty() || m.front() < best.front()) best = m;
  }
  return best;
}

}  // namespace

TopologyResult topologicalOrder(const Graph& graph) {
  BoostGraph g = buildDependencyGraph(graph);
  size_t n = boost::num_vertices(g);
  std::vector<int> indegree(n, 0);
  for (auto [e, end] = boost::edges(g); e != end; ++e) ++indegree[boost::target(*e, g)];

  auto key = [&](OpId id) { return std::make_pair(graph.ops[id].modelIndex < 0 ? INT32_MAX : graph.ops[id].modelIndex, id); };
  auto later = [&](OpId a, OpId b) { return key(a) > key(b); };
  std::priority_queue<OpId, std::vector<OpId>, decltype(later)> ready(later);
  for (size_t v = 0; v < n; ++v)
    if (indegree[v] == 0) ready.push(static_cast<OpId>(v));

  TopologyResult result;
  result.order.reserve(n);
  while (!ready.empty()) {
    OpId v = ready.top();
    ready.pop();
    result.order.push_back(v);
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e)
      if (--indegree[boost::target(*e, g)] == 0) ready.push(static_cast<OpId>(boost::target(*e, g)));
  }
  if (result.order.size() != n) result.cycle = findCycle(g);
  return result;
}

}  // namespace irc
