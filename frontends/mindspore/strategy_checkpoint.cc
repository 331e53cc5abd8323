#include "frontends/mindspore/strategy_checkpoint.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "frontends/json_location.h"
#include "ir/suggest.h"
#include "ops/op_defs.h"
#include "ops/op_sharding.h"

namespace irc {
namespace {

using json = nlohmann::ordered_json;

std::string keyOf(const Op& op) { return op.msName.empty() ? op.name : op.msName; }

}  // namespace

std::string strategyCheckpointJson(const Graph& graph, int64_t globalRank) {
  json strategies = json::object(), layouts = json::object();
  for (OpId id : graph.order) {
    const Op& op = graph.op(id);
    if (op.inserted() || !op.parallel->hasSharding || takesLayoutsFromNeighbours(op)) continue;
    strategies[keyOf(op)] = {{"stage", op.stage}, {"parallel_strategy", strategyOf(op)}};
  }
  for (ValueId p : graph.parameters) {
    const Value& v = graph.value(p);
    if (!v.layout) continue;
    json map = json::array();
    for (const auto& axes : v.layout->dims) {
      if (axes.empty()) map.push_back(-1);
      else if (axes.size() == 1) map.push_back(v.layout->mesh.rank() - 1 - axes[0]);
      else {
        json several = json::array();
        for (int a : axes) several.push_back(v.layout->mesh.rank() - 1 - a);
        map.push_back(several);
      }
    }
    layouts[v.name] = {{"dev_matrix", v.layout->mesh.dims}, {"tensor_map", map},
                       {"tensor_shape", v.type.shape},      {"field", 0},
                       {"opt_weight_shard_step", 0},        {"opt_weight_shard_size", 0}};
  }
  // The written rank's pipeline stage (0 without stages).
  int64_t stage = graph.stageDevices > 0 ? globalRank / graph.stageDevices : 0;
  json ckpt = {{"current_stage", stage}, {"parallel_strategy_item", strategies}, {"parallel_layout_item", layouts}};
  return ckpt.dump(2) + "\n";
}

bool applyStrategyCheckpoint(Graph& graph, const std::string& text, DiagnosticEngine& diags) {
  auto fail = [&](SourceLoc loc, const std::string& message) {
    diags.error(loc, message);
    return false;
  };
  json ckpt;
  try {
    ckpt = json::parse(text);
  } catch (const json::parse_error& e) {
    return fail(locOfParseError(text, e), fmt::format("not a strategy checkpoint: {}", e.what()));
  }
  if (!ckpt.is_object() || !ckpt.contains("parallel_strategy_item") || !ckpt["parallel_strategy_item"].is_object())
    return fail({1, 1}, "a strategy checkpoint is an object with a 'parallel_strategy_item' object (MindSpore's format)");
  std::map<std::string, Op*> byKey;
  std::vector<std::string> keys;
  for (Op& op : graph.ops)
    if (!op.inserted()) {
      byKey[keyOf(op)] = &op;
      keys.push_back(keyOf(op));
    }
  bool ok = true;
  for (const auto& [node, item] : ckpt["parallel_strategy_item"].items()) {
    auto it = byKey.find(node);
    if (it == byKey.end()) {
      ok = fail({1, 1}, fmt::format("the checkpoint names '{}', which is no op of the model{} (give the op an ms_name to match "
                                    "MindSpore's node names)",
                                    node, didYouMean(node, keys)));
      continue;
    }
    const json* strategy = item.is_object() && item.contains("parallel_strategy") ? &item["parallel_strategy"] : nullptr;
    ShardStrategy parsed;
    bool shapeOk = strategy && strategy->is_array();
    if (shapeOk)
      for (const auto& tuple : *strategy) {
        if (!tuple.is_array()) {
          shapeOk = false;
          break;
        }
        IntTuple t;
        for (const auto& x : tuple) {
          if (!x.is_number_integer()) shapeOk = false;
          else t.push_back(x.get<int64_t>());
        }
        parsed.push_back(t);
      }
    if (!shapeOk) {
      ok = fail({1, 1}, fmt::format("'{}': parallel_strategy must be a list of lists of integers", node));
      continue;
    }
    // Strategy propagation makes it the op's configured strategy where the op would otherwise
    // get another (passes/strategy_propagation.cc).
    it->second->annotation->checkpointStrategy = parsed;
  }
  return ok;
}

}  // namespace irc
