#include "ops/op_inserter.h"

#include "ir/limits.h"

namespace irc {

ValueId OpInserter::add(std::string name, std::string instance, std::string type, std::vector<Operand> operands, AttrMap attrs,
                        std::vector<TensorType> results, std::shared_ptr<const RedistStep> step, std::string reason) {
  // A bound on the work (docs/limits.md): a gather over a million ranks on a dim other than 0
  // would otherwise write a Split with a million outputs into every dump.
  if (++inserted_ > kMaxInsertedNodes) throw InsertionLimitReached{};
  Op op;
  op.name = std::move(name);
  op.instanceName = std::move(instance);
  op.type = std::move(type);
  op.operands = std::move(operands);
  op.attrs = std::move(attrs);
  op.step = std::move(step);
  op.reason = std::move(reason);
  op.owner = owner_;
  op.role = role_;
  op.stage = owner_ != kNoId ? graph_.op(owner_).stage : 0;
  OpId id = graph_.addOp(std::move(op), results);
  order.push_back(id);
  return graph_.op(id).results[0];
}

}  // namespace irc
