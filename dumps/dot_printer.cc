#include "dumps/dot_printer.h"

#include <map>
#include <sstream>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/graphviz.hpp>
#include <fmt/format.h>

#include "ops/inserted_ops.h"
#include "ops/collective.h"
#include "ops/op_defs.h"
#include "ops/op_sharding.h"

namespace irc {
namespace {

struct DotNode {
  std::string label;
  std::string fill;  // empty: not filled
  std::string shape = "box";
};
struct DotEdge {
  std::string label;
};
using DotGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, DotNode, DotEdge>;

// DOT string contents: quotes and backslashes escaped (names are free of control characters).
std::string dotEscaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// A colour per group collective (a transfer keeps the default), and for the local steps.
std::string fillOf(const std::string& type) {
  static const std::map<CollectiveKind, std::string> collectives = {{CollectiveKind::AllReduce, "#f4a6a6"},
                                                                    {CollectiveKind::AllGather, "#a6c8f4"},
                                                                    {CollectiveKind::ReduceScatter, "#f4cfa6"},
                                                                    {CollectiveKind::AlltoAll, "#d3a6f4"}};
  static const std::map<std::string, std::string> local = {
      {"StridedSlice", "#dddddd"}, {"_MirrorOperator", "#b8e0b0"}, {"Reshape", "#eeeeee"}};
  if (std::optional<CollectiveKind> kind = collectiveOfType(type)) {
    auto it = collectives.find(*kind);
    return it == collectives.end() ? "#f0f0f0" : it->second;
  }
  auto it = local.find(type);
  return it == local.end() ? "#f0f0f0" : it->second;
}

std::string shapeText(const Graph& graph, ValueId v) { return formatShape(graph.value(v).type.shape); }

}  // namespace

std::string printDot(const Graph& graph, const PrintOptions& options) {
  DotGraph g;
  std::map<ValueId, DotGraph::vertex_descriptor> producerOf;
  for (const auto* list : {&graph.inputs, &graph.parameters})
    for (ValueId v : *list) {
      const Value& value = graph.value(v);
      auto vertex =
          boost::add_vertex(DotNode{fmt::format("{}\\n{}", dotEscaped(value.name), shapeText(graph, v)), "", "ellipse"}, g);
      producerOf[v] = vertex;
    }
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    const OpForRank view(graph, op, options.rank);
    std::string label = fmt::format("{}\\n{}", dotEscaped(op.printedName.empty() ? op.name : op.printedName), op.type);
    if (!op.inserted() && op.parallel->hasSharding && !takesLayoutsFromNeighbours(op))
      label += "\\n" + formatStrategy(strategyOf(op));
    if (auto it = view.attrs().find("group_ranks"); it != view.attrs().end())
      label += "\\ngroup " + std::get<std::string>(it->second);
    if (!op.results.empty()) label += "\\n" + shapeText(graph, op.results[0]);
    auto vertex = boost::add_vertex(DotNode{label, op.inserted() ? fillOf(op.type) : "", "box"}, g);
    for (ValueId r : op.results) producerOf[r] = vertex;
    for (const Operand& o : op.operands) {
      if (!o.isValue() || !producerOf.count(o.value)) continue;
      std::string bytes;
      if (op.step && opTypeOfStep(*op.step) == op.type) {
        double sent = stepSendBytes(*op.step, byteSize(graph.value(op.results[0]).type.dtype));
        if (sent > 0) bytes = fmt::format("{} B/rank", formatNumber(sent));
      }
      boost::add_edge(producerOf[o.value], vertex, DotEdge{bytes}, g);
    }
  }
  std::ostringstream out;
  boost::write_graphviz(
      out, g,
      [&](std::ostream& os, DotGraph::vertex_descriptor v) {
        const DotNode& n = g[v];
        os << "[label=\"" << n.label << "\", shape=" << n.shape;
        if (!n.fill.empty()) os << ", style=filled, fillcolor=\"" << n.fill << "\"";
        os << "]";
      },
      [&](std::ostream& os, DotGraph::edge_descriptor e) {
        if (!g[e].label.empty()) os << "[label=\"" << g[e].label << "\"]";
      },
      [&](std::ostream& os) {
        os << "graph [label=\"" << dotEscaped(graph.name) << " (rank " << options.rank << ")\", rankdir=TB];\n";
      });
  return out.str();
}

}  // namespace irc
