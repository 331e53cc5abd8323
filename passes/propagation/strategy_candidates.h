#pragma once
// MindSpore's candidate strategies of an op for a device count (§5.1): every split of the
// factors of its strategy space into powers of two that divide the factor and the remaining
// budget, replicated factors unsplit; with fully_use_devices only those using all devices or one;
// those failing the op's checks dropped. Deterministic order (lexicographic over the strategy
// space, larger splits of earlier factors first).
#include <vector>

#include "ops/op_rule.h"
#include "ops/op_sharding.h"

namespace irc {

std::vector<OpSharding> candidateShardings(const OpRule& rule, const OpView& op, int64_t deviceNum, bool fullyUseDevices);

}  // namespace irc
