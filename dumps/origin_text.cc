#include "dumps/origin_text.h"

namespace irc {

std::string originSourceName(const Graph& graph, const StrategyOrigin& origin) {
  if (origin.fixedPoint) return "factor propagation";
  if (origin.fromOp != kNoId) return graph.op(origin.fromOp).name;
  if (origin.fromValue != kNoId) return graph.value(origin.fromValue).name;
  return "";
}

std::string originEdgeText(const Graph& graph, const Op& op, const StrategyOrigin& origin) {
  switch (origin.edge) {
    case StrategyOrigin::Edge::None: return "";
    case StrategyOrigin::Edge::FromProducer: return originSourceName(graph, origin) + " -> " + op.name;
    case StrategyOrigin::Edge::FromConsumer: return op.name + " -> " + originSourceName(graph, origin);
    case StrategyOrigin::Edge::OutputConstraint: return op.name + " -> its output sharding";
  }
  return "";
}

}  // namespace irc
