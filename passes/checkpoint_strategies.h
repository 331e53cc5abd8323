#pragma once
// A step of pipeline slot 1 (before strategy propagation, no dump of its own): the ops a
// MindSpore strategy checkpoint names. Where a dry run of propagation gives one another strategy
// than the checkpoint's, the checkpoint's becomes its configured strategy (it then seeds
// propagation, as a loaded strategy does in MindSpore); where they agree nothing changes.
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createCheckpointStrategyPass(const CompileOptions& options);

}  // namespace irc
