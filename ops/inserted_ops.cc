#include "ops/inserted_ops.h"

#include <algorithm>

#include "ops/collective.h"

namespace irc {

std::string_view opTypeOfStep(const RedistStep& step) {
  // A collective's type is its home's (ops/collective.h); the local steps' are MindSpore's ops.
  if (std::optional<CollectiveKind> kind = collectiveOf(step)) return collectiveName(*kind);
  switch (step.kind) {
    case RedistStep::Kind::Reshape: return "Reshape";
    case RedistStep::Kind::Split: return "StridedSlice";
    case RedistStep::Kind::RealDiv: return "RealDiv";
    case RedistStep::Kind::VocabOffset: return "Sub";
    case RedistStep::Kind::Mirror: return "_MirrorOperator";
    case RedistStep::Kind::Receive: return "Receive";
    default: return "";
  }
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

namespace {

void applyRankArgs(const RedistStep& s, AttrMap& attrs, std::vector<Operand>& operands, int64_t rank, RankDetail detail) {
  // A group's MindSpore name and ranks text: thousands of ranks formatted per collective, read by
  // the printers, the report and the executor, never by shape inference (RankDetail::Shapes).
  auto groupNames = [&](std::initializer_list<const char*> names) {
    std::string name, ranks;
    if (detail == RankDetail::Everything) {
      std::vector<int64_t> group = stepGroup(s, rank);
      name = mindsporeGroupName(group);
      ranks = groupRanksText(group);
    }
    for (const char* key : names) attrs[key] = std::string(key) == "group_ranks" ? ranks : name;
  };
  auto setGroup = [&] { groupNames({"group", "group_ranks"}); };
  switch (s.kind) {
    case RedistStep::Kind::Split: {
      auto [begin, end] = splitBounds(s, rank);
      operands[1].constant = Attribute(begin);
      operands[2].constant = Attribute(end);
      operands[3].constant = Attribute(IntTuple(begin.size(), 1));
      break;
    }
    case RedistStep::Kind::Gather:
      setGroup();
      attrs["rank_size"] = s.groupSize();
      break;
    case RedistStep::Kind::AllReduce:
      setGroup();
      attrs["op"] = std::string(reduceOpName(s.reduceOp));
      attrs["fusion"] = int64_t{0};
      attrs["index"] = int64_t{0};
      break;
    case RedistStep::Kind::ReduceScatter:
      setGroup();
      attrs["op"] = std::string(reduceOpName(s.reduceOp));
      attrs["rank_size"] = s.groupSize();
      break;
    case RedistStep::Kind::AlltoAll:
      setGroup();
      attrs["split_count"] = s.groupSize();
      attrs["split_dim"] = int64_t{s.dim};
      attrs["concat_dim"] = int64_t{s.concatDim};
      break;
    case RedistStep::Kind::VocabOffset: {
      std::vector<int64_t> group = stepGroup(s, rank);
      int64_t index = std::find(group.begin(), group.end(), rank) - group.begin();
      auto& offset = std::get<ScalarTensor>(*operands[1].constant);
      offset.value = static_cast<double>(index * s.rows);
      break;
    }
    case RedistStep::Kind::Mirror:
      setGroup();
      attrs["dev_num"] = s.groupSize();
      attrs["mean_flag"] = true;
      break;
    case RedistStep::Kind::Send:
    case RedistStep::Kind::Receive: {
      // The pipeline group: the ranks at this rank's position in every stage; the peer is named
      // by its stage, its rank in that group (as MindSpore's pipeline split does).
      groupNames({"group", "group_back", "group_ranks"});
      attrs[s.kind == RedistStep::Kind::Send ? "dest_rank" : "src_rank"] = s.peerStage;
      attrs["sr_tag"] = s.srTag;
      attrs["shape"] = IntTuple(s.localBefore.begin(), s.localBefore.end());
      break;
    }
    case RedistStep::Kind::Reshape:
    case RedistStep::Kind::RealDiv: break;
  }
}

}  // namespace

bool hasRankArgs(const Op& op) { return op.step && opTypeOfStep(*op.step) == op.type; }

OpForRank::OpForRank(const Graph& graph, const Op& op, int64_t rank, RankDetail detail) : op_(op) {
  if (!graph.localShapes && hasRankArgs(op)) args_ = rankArgs(op, rank, detail);
}

void materializeForRank(Op& op, int64_t rank) {
  if (hasRankArgs(op)) applyRankArgs(*op.step, op.attrs, op.operands, rank, RankDetail::Everything);
}

RankArgs rankArgs(const Op& op, int64_t rank, RankDetail detail) {
  RankArgs args{op.attrs, op.operands};
  applyRankArgs(*op.step, args.attrs, args.operands, rank, detail);
  return args;
}

}  // namespace irc
