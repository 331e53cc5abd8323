#include "ops/verifier.h"

#include <algorithm>

#include <fmt/format.h>

#include "ops/collective.h"
#include "ops/inserted_ops.h"
#include "ops/op_defs.h"
#include "ops/shape_inference.h"

namespace irc {
namespace {

bool constantFits(OperandKind kind, const Attribute& a) {
  switch (kind) {
    case OperandKind::Int: return std::holds_alternative<int64_t>(a);
    case OperandKind::IntOrTuple: return std::holds_alternative<int64_t>(a) || std::holds_alternative<IntTuple>(a);
    case OperandKind::Tuple: return std::holds_alternative<IntTuple>(a);
    case OperandKind::DTypeConst: return std::holds_alternative<DType>(a);
    case OperandKind::TensorOrScalar: return std::holds_alternative<ScalarTensor>(a);
    default: return false;
  }
}

std::string checkOperands(const OpDef& def, const Op& op) {
  bool variadic = !def.operands.empty() && def.operands.back().kind == OperandKind::TensorList;
  size_t fixed = variadic ? def.operands.size() - 1 : def.operands.size();
  // A Receive reads its Send's result in the global graph and nothing on a rank (its data
  // arrives from the other stage).
  size_t least = variadic && def.family != OpFamily::Receive ? fixed + 1 : fixed;
  if (variadic ? op.operands.size() < least : op.operands.size() != fixed)
    return fmt::format("has {} operands, {} takes {}{}", op.operands.size(), def.type, fixed + (variadic ? 1 : 0),
                       variadic ? " or more" : "");
  for (size_t i = 0; i < op.operands.size(); ++i) {
    OperandKind kind = i < fixed ? def.operands[i].kind : OperandKind::Tensor;
    const Operand& o = op.operands[i];
    bool wantsValue = kind == OperandKind::Tensor || kind == OperandKind::TensorList;
    if (o.isValue()) {
      if (!wantsValue && kind != OperandKind::TensorOrScalar) return fmt::format("operand {} must be a constant", i);
    } else if (wantsValue || !o.constant || !constantFits(kind, *o.constant)) {
      return fmt::format("operand {} has the wrong kind", i);
    }
  }
  return {};
}

// The op's operands as shape inference reads them; false (with the problems said) when one is
// not a value of the graph or not defined yet.
bool readOperands(const Graph& graph, const Op& op, const std::vector<bool>& defined, std::vector<InferOperand>& in,
                  std::vector<std::string>& problems) {
  bool ok = true;
  for (const Operand& o : op.operands) {
    if (o.isValue() && (o.value < 0 || static_cast<size_t>(o.value) >= graph.values.size())) {
      problems.push_back(fmt::format("op '{}' uses value id {}, which does not exist", op.name, o.value));
      return false;
    }
    if (o.isValue() && !defined[o.value]) {
      problems.push_back(fmt::format("op '{}' uses '{}' before it is defined", op.name, graph.value(o.value).name));
      ok = false;
    }
    in.push_back({o.isValue() ? &graph.value(o.value).type : nullptr, o.isValue() ? nullptr : &*o.constant});
  }
  return ok;
}

// The op's result types against what shape inference gives for its operands.
void checkResultTypes(const Graph& graph, const Op& op, const OpDef& def, const std::vector<InferOperand>& in,
                      std::vector<std::string>& problems) {
  InferResult r = inferResultTypes(def, in, op.attrs);
  if (auto* e = std::get_if<InferError>(&r)) {
    problems.push_back(fmt::format("op '{}' ({}): {}", op.name, op.type, e->message));
    return;
  }
  const auto& types = std::get<std::vector<TensorType>>(r);
  if (types.size() != op.results.size()) {
    problems.push_back(fmt::format("op '{}' has {} results, shape inference gives {}", op.name, op.results.size(), types.size()));
    return;
  }
  for (size_t i = 0; i < types.size(); ++i)
    if (!(graph.value(op.results[i]).type == types[i]))
      problems.push_back(fmt::format("op '{}' result {} has type {} {}, shape inference gives {} {}", op.name, i,
                                     modelName(graph.value(op.results[i]).type.dtype),
                                     formatShape(graph.value(op.results[i]).type.shape), modelName(types[i].dtype),
                                     formatShape(types[i].shape)));
}

// Each inserted step against its own shapes, and each edge's redistribution as a chain: it
// starts from the producer's slice, each step takes what the one before left, and it ends at the
// slice the consumer needs, having completed the partial sums the layouts say.
void checkRedistributions(const Graph& graph, std::vector<std::string>& problems) {
  for (OpId id : graph.order)
    if (const Op& op = graph.op(id); op.step)
      if (std::string why = stepShapeProblem(*op.step); !why.empty())
        problems.push_back(fmt::format("inserted op '{}' ({}) takes {} to {}: {}", op.name, op.type,
                                       formatShape(op.step->localBefore), formatShape(op.step->localAfter), why));
  for (const RedistributionRecord& rec : graph.redistributions) {
    Shape local = rec.from.sliceShape();
    int64_t completed = 1;
    // A step emitted as several ops (an AllGather off dim 0 with its Split and Concat) is one
    // step: its ops share it.
    const RedistStep* previous = nullptr;
    for (OpId id : rec.ops) {
      if (id < 0 || static_cast<size_t>(id) >= graph.ops.size() || !graph.op(id).step || graph.op(id).step.get() == previous)
        continue;
      const RedistStep& step = *graph.op(id).step;
      previous = &step;
      if (step.localBefore != local) {
        problems.push_back(fmt::format("the redistribution of '{}' into '{}' hands '{}' a {} slice; it takes {}",
                                       graph.value(rec.value).name, rec.consumer, graph.op(id).name, formatShape(local),
                                       formatShape(step.localBefore)));
        break;
      }
      local = step.localAfter;
      if (completesPartial(step) || collectiveOf(step) == CollectiveKind::ReduceScatter) completed *= step.groupSize();
    }
    if (local != rec.to.sliceShape())
      problems.push_back(fmt::format("the redistribution of '{}' into '{}' ends at a {} slice; '{}' needs {}",
                                     graph.value(rec.value).name, rec.consumer, formatShape(local), rec.consumer,
                                     formatShape(rec.to.sliceShape())));
    auto partialRanks = [](const TensorLayout& l) {
      int64_t n = 1;
      for (int a : l.partialAxes) n *= l.mesh.dims[a];
      return n;
    };
    if (partialRanks(rec.from) != completed * partialRanks(rec.to))
      problems.push_back(fmt::format("the redistribution of '{}' into '{}' sums over {} ranks; its layouts need {}",
                                     graph.value(rec.value).name, rec.consumer, completed,
                                     partialRanks(rec.from) / partialRanks(rec.to)));
  }
}

}  // namespace

std::vector<std::string> verifyGraph(const Graph& graph) {
  std::vector<std::string> problems;
  std::vector<bool> defined(graph.values.size(), false);
  for (ValueId v : graph.inputs) defined[v] = true;
  for (ValueId v : graph.parameters) defined[v] = true;
  std::vector<bool> placed(graph.ops.size(), false);

  for (OpId id : graph.order) {
    if (id < 0 || static_cast<size_t>(id) >= graph.ops.size() || placed[id]) {
      problems.push_back(fmt::format("order lists op id {} twice or out of range", id));
      continue;
    }
    placed[id] = true;
    const Op& op = graph.op(id);
    const OpDef* def = findOpDef(op.type);
    if (!def) {
      problems.push_back(fmt::format("op '{}' has unknown type '{}'", op.name, op.type));
      continue;
    }
    auto outOfRange = [&](ValueId v) { return v < 0 || static_cast<size_t>(v) >= graph.values.size(); };
    if (std::any_of(op.results.begin(), op.results.end(), outOfRange)) {
      problems.push_back(fmt::format("op '{}' has a result id that does not exist", op.name));
      continue;
    }
    if (std::string err = checkOperands(*def, op); !err.empty()) {
      problems.push_back(fmt::format("op '{}' ({}) {}", op.name, op.type, err));
      continue;
    }
    std::vector<InferOperand> in;
    if (!readOperands(graph, op, defined, in, problems)) continue;
    bool ok = true;
    // An inserted op of the global graph gets its groups and bounds per rank: check them as rank
    // 0 sees them (every rank's are made alike).
    const OpForRank view(graph, op, 0, RankDetail::Shapes);
    for (const AttrSpec& spec : def->attrs)
      if (!view.attrs().count(spec.name)) {
        problems.push_back(fmt::format("op '{}' lacks attribute '{}'", op.name, spec.name));
        ok = false;
      }
    if (!ok) continue;
    if (op.inserted() && !graph.localShapes) {
      // In the global view an inserted op carries the global type of the value it moves; its
      // arithmetic is checked on every rank's local graph instead.
      for (ValueId r2 : op.results) defined[r2] = true;
      continue;
    }
    checkResultTypes(graph, op, *def, in, problems);
    for (ValueId r2 : op.results) defined[r2] = true;
  }
  checkRedistributions(graph, problems);
  // A pipelined rank's graph runs its own stage's ops only.
  auto elsewhere = [&](const Op& op) { return graph.localShapes && graph.stageDevices > 0 && op.stage != graph.stage; };
  for (size_t id = 0; id < graph.ops.size(); ++id)
    if (!placed[id] && !elsewhere(graph.ops[id]))
      problems.push_back(fmt::format("op '{}' is missing from the order", graph.ops[id].name));
  for (ValueId v : graph.outputs)
    if (v < 0 || static_cast<size_t>(v) >= graph.values.size() || !defined[v])
      problems.push_back(fmt::format("graph output {} is not defined", v));
  return problems;
}

}  // namespace irc
