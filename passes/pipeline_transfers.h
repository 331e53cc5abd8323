#pragma once
// A step of pipeline slot 3 (after redistribution, no dump of its own: the stage dumps after it),
// with pipeline stages: the Send/Receive pair of every value crossing
// stages, each placed right before its value's first reader in the later stage (docs/pipeline.md).
#include <memory>

#include "passes/manager/compile_options.h"
#include "passes/manager/pass.h"

namespace irc {

std::unique_ptr<Pass> createPipelineTransferPass(const CompileOptions& options);

}  // namespace irc
