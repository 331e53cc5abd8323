#include "ir/inserted_ops.h"

#include <algorithm>

namespace irc {

std::string opTypeOfStep(const RedistStep& step) {
  switch (step.kind) {
    case RedistStep::Kind::Reshape: return "Reshape";
    case RedistStep::Kind::Split: return "StridedSlice";
    case RedistStep::Kind::Gather: return "AllGather";
    case RedistStep::Kind::AlltoAll: return "AlltoAll";
    case RedistStep::Kind::AllReduce: return "AllReduce";
    case RedistStep::Kind::ReduceScatter: return "ReduceScatter";
    case RedistStep::Kind::RealDiv: return "RealDiv";
    case RedistStep::Kind::VocabOffset: return "Sub";
    case RedistStep::Kind::Mirror: return "_MirrorOperator";
  }
  return "";
}

Op materializedCopy(const Op& inserted, int64_t rank) {
  Op op;
  op.name = inserted.name;
  op.printedName = inserted.printedName;
  op.type = inserted.type;
  op.instanceName = inserted.instanceName;
  op.operands = inserted.operands;
  op.attrs = inserted.attrs;
  op.results = inserted.results;
  op.loc = inserted.loc;
  op.modelIndex = inserted.modelIndex;
  op.reason = inserted.reason;
  op.step = inserted.step;
  op.owner = inserted.owner;
  op.role = inserted.role;
  materializeForRank(op, rank);
  return op;
}

ValueId modelValueBehind(const Graph& graph, ValueId v) {
  while (true) {
    const Value& value = graph.value(v);
    if (value.producer == kNoId || !graph.op(value.producer).inserted()) return v;
    const Op& producer = graph.op(value.producer);
    auto first = std::find_if(producer.operands.begin(), producer.operands.end(), [](const Operand& o) { return o.isValue(); });
    if (first == producer.operands.end()) return v;
    v = first->value;
  }
}

void materializeForRank(Op& op, int64_t rank) {
  if (!op.step || opTypeOfStep(*op.step) != op.type) return;  // Split/Concat of a gather sequence
  const RedistStep& s = *op.step;
  auto setGroup = [&] {
    std::vector<int64_t> group = stepGroup(s, rank);
    op.attrs["group"] = mindsporeGroupName(group);
    op.attrs["group_ranks"] = groupRanksText(group);
  };
  switch (s.kind) {
    case RedistStep::Kind::Split: {
      auto [begin, end] = splitBounds(s, rank);
      op.operands[1].constant = Attribute(begin);
      op.operands[2].constant = Attribute(end);
      op.operands[3].constant = Attribute(IntTuple(begin.size(), 1));
      break;
    }
    case RedistStep::Kind::Gather:
      setGroup();
      op.attrs["rank_size"] = s.groupSize();
      break;
    case RedistStep::Kind::AllReduce:
      setGroup();
      op.attrs["op"] = std::string(reduceOpName(s.reduceOp));
      op.attrs["fusion"] = int64_t{0};
      op.attrs["index"] = int64_t{0};
      break;
    case RedistStep::Kind::ReduceScatter:
      setGroup();
      op.attrs["op"] = std::string(reduceOpName(s.reduceOp));
      op.attrs["rank_size"] = s.groupSize();
      break;
    case RedistStep::Kind::AlltoAll:
      setGroup();
      op.attrs["split_count"] = s.groupSize();
      op.attrs["split_dim"] = int64_t{s.dim};
      op.attrs["concat_dim"] = int64_t{s.concatDim};
      break;
    case RedistStep::Kind::VocabOffset: {
      std::vector<int64_t> group = stepGroup(s, rank);
      int64_t index = std::find(group.begin(), group.end(), rank) - group.begin();
      auto& offset = std::get<ScalarTensor>(*op.operands[1].constant);
      offset.value = static_cast<double>(index * s.rows);
      break;
    }
    case RedistStep::Kind::Mirror:
      setGroup();
      op.attrs["dev_num"] = s.groupSize();
      op.attrs["mean_flag"] = true;
      break;
    case RedistStep::Kind::Reshape:
    case RedistStep::Kind::RealDiv:
      break;
  }
}

}  // namespace irc
