#include "passes/pipeline_transfers.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ops/collective.h"
#include "ops/inserted_ops.h"
#include "ops/op_inserter.h"
#include "plan/plan_queries.h"
#include "plan/stage_view.h"

namespace irc {
namespace {

// After redistribution: the Send/Receive pairs of every value crossing stages (recorded in
// graph.transfers), in the global order right before the value's first reader in the later stage.
void insertPipelineTransfers(Graph& graph, const CompileOptions& options) {
  const int64_t stages = options.pipelineStages;
  OpInserter ins(graph);
  std::map<std::pair<ValueId, int32_t>, ValueId> received;  // (value, stage) -> its Receive's result
  std::map<std::pair<int32_t, int32_t>, int64_t> tags;      // per (from, to) stage pair with a Send: Sends so far
  std::vector<OpId> order = graph.order;
  graph.transfers.clear();
  graph.stageDevices = options.deviceNum;
  for (OpId id : order) {
    int32_t stage = graph.op(id).stage;
    for (size_t i = 0; i < graph.op(id).operands.size(); ++i) {
      const Operand o = graph.op(id).operands[i];
      if (!o.isValue()) continue;
      ValueId v = o.value;
      OpId producer = graph.value(v).producer;
      // A value crosses to another stage's ranks where a later virtual stage reads it (with
      // virtual stages, from the last stage back to the first too).
      if (producer == kNoId || virtualStageOf(graph.op(producer), stages) >= virtualStageOf(graph.op(id), stages) ||
          graph.op(producer).stage == stage)
        continue;
      auto key = std::make_pair(v, stage);
      auto it = received.find(key);
      if (it == received.end()) {
        int32_t from = graph.op(producer).stage;
        // A copy: adding the ops below may move the graph's ops and values.
        TensorLayout layout = layoutOfValue(graph, v);
        TensorType type = graph.value(v).type;
        TransferSteps steps =
            transferSteps(stages, options.deviceNum, from, stage, layout.sliceShape(), type.shape, tags[{from, stage}]++);
        AttrMap attrs{{"dtype", std::string(dumpName(type.dtype))}};
        std::string valueName = graph.value(v).name;
        ins.setOwner(producer, InsertedRole::Transfer);
        std::string name = fmt::format("{}.send.{}", valueName, stage);
        ValueId sent = ins.add(name, fmt::format("send_{}_{}", valueName, stage), std::string(opTypeOfStep(steps.send)),
                               {Operand::ofValue(v)}, attrs, {type}, std::make_shared<const RedistStep>(steps.send),
                               fmt::format("'{}' of stage {} is read by '{}' in stage {}: its ranks send their slices", valueName,
                                           from, graph.op(id).name, stage));
        OpId send = graph.value(sent).producer;
        ins.setOwner(graph.op(id).inserted() ? graph.op(id).owner : id, InsertedRole::Transfer);
        ValueId got =
            ins.add(fmt::format("{}.receive.{}", valueName, stage), fmt::format("receive_{}_{}", valueName, stage),
                    std::string(opTypeOfStep(steps.receive)), {Operand::ofValue(sent)}, attrs, {type},
                    std::make_shared<const RedistStep>(steps.receive),
                    fmt::format("stage {} receives '{}' from the rank at its position in stage {}", stage, valueName, from));
        graph.transfers.push_back(
            {send, graph.value(got).producer, v, from, stage, steps.send.srTag, sliceBytes(layout, type.dtype)});
        it = received.emplace(key, got).first;
      }
      graph.op(id).operands[i] = Operand::ofValue(it->second);
    }
    ins.order.push_back(id);
  }
  graph.order = std::move(ins.order);
}

}  // namespace

std::unique_ptr<Pass> createPipelineTransferPass(const CompileOptions& options) {
  // A step of redistribution's stage: Send/Receive where a value crosses stages.
  return makePass({"pipeline_transfers", "", {GraphFact::Layouts}, {GraphFact::Communication}},
                  [options](Graph& graph, PassContext&) {
                    if (options.pipelineStages <= 1) return PassStatus::Unchanged;
                    insertPipelineTransfers(graph, options);
                    return PassStatus::Changed;
                  });
}

}  // namespace irc
