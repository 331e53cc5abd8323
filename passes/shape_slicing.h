#pragma once
// Pipeline slot 4 (dump `validate`): one rank's local graph.
#include <cstdint>
#include <memory>

#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createShapeSlicingPass(int64_t rank);

}  // namespace irc
