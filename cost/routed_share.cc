#include "cost/routed_share.h"

#include <algorithm>

#include "ops/op_defs.h"

namespace irc {

std::vector<double> routedShares(const Graph& graph) {
  std::vector<double> valueShare(graph.values.size(), 1.0), opShare(graph.ops.size(), 1.0);
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    double share = 1.0;
    for (const Operand& o : op.operands)
      if (o.isValue()) share = std::min(share, valueShare[o.value]);
    opShare[id] = share;
    double resultShare = share;
    if (!op.inserted() && familyOf(op) == OpFamily::MoeRouting) {
      // The dispatch (it has a capacity) fills its slots; the combine takes the tokens back.
      auto capacity = op.attrs.find("capacity");
      auto experts = op.attrs.find("num_experts");
      resultShare = 1.0;
      if (capacity != op.attrs.end() && experts != op.attrs.end() && op.operands.size() > 1 && op.operands[1].isValue()) {
        const Shape& indices = graph.value(op.operands[1].value).type.shape;  // [G, S, K]
        const double choices = indices.size() == 3 ? static_cast<double>(indices[1] * indices[2]) : 0;
        const double slots = static_cast<double>(std::get<int64_t>(experts->second) * std::get<int64_t>(capacity->second));
        if (choices > 0 && slots > 0) resultShare = std::min(1.0, choices / slots);
      }
    }
    for (ValueId r : op.results) valueShare[r] = resultShare;
  }
  return opShare;
}

std::vector<double> activeParameterShares(const Graph& graph) {
  // Per value, the dispatch whose slots it holds (kNoId outside the experts).
  std::vector<OpId> region(graph.values.size(), kNoId);
  std::vector<double> share(graph.values.size(), 1.0);
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    OpId from = kNoId;
    for (const Operand& o : op.operands)
      if (o.isValue() && region[o.value] != kNoId) from = region[o.value];
    const bool routing = !op.inserted() && familyOf(op) == OpFamily::MoeRouting;
    if (routing) from = op.attrs.count("capacity") ? id : kNoId;  // a dispatch opens the slots, a combine closes them
    if (from != kNoId && !routing) {
      const Op& dispatch = graph.op(from);
      const int64_t experts = std::get<int64_t>(dispatch.attrs.at("num_experts"));
      const Shape& indices = graph.value(dispatch.operands[1].value).type.shape;  // [G, S, K]
      const int64_t perToken = indices.size() == 3 ? indices[2] : 1;
      for (const Operand& o : op.operands) {
        if (!o.isValue()) continue;
        const Value& v = graph.value(o.value);
        if (v.producer == kNoId && v.trainable && !v.type.shape.empty() && v.type.shape[0] == experts)
          share[o.value] =
              std::min(share[o.value], static_cast<double>(std::min(perToken, experts)) / static_cast<double>(experts));
      }
    }
    for (ValueId r : op.results) region[r] = from;
  }
  return share;
}

}  // namespace irc
