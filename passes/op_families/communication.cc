// The ops the passes insert (AllReduce, AllGather, ReduceScatter, AlltoAll, StridedSlice,
// _MirrorOperator): they carry their step (ir/redist_step.h) instead of a factor rule.
#include "passes/op_families/families.h"

namespace irc::families {
namespace {

class Communication : public OpFamilyRules {
 public:
  std::optional<OpRule> rule(const RuleInputs&) const override { return std::nullopt; }
};

}  // namespace

const OpFamilyRules& communication() {
  static const Communication rules;
  return rules;
}

}  // namespace irc::families
