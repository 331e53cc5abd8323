#pragma once
// The machines irc knows by name (`cluster.preset`, `--cluster`): each preset's figures as data,
// every one with its source in docs/cluster.md (the vendors' datasheets ../shared/hardware.md
// gathers; the efficiencies from NVIDIA's and the NCCL tests' published figures). What the
// figures mean is ir/cluster.h's.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/cluster.h"

namespace irc {

// The presets' names (dgx-a100-80gb, dgx-h100, h200-sxm, dgx-b200, gb200-nvl72, ..., docs/cluster.md)
// and a preset by name.
const std::vector<std::string>& clusterPresetNames();
std::optional<ClusterDescription> clusterPreset(std::string_view name);

}  // namespace irc
