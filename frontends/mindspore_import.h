#pragma once
// `irc import DUMP.ir`: a MindSpore `parse` / `step_parallel_begin` dump (1.x or 2.x layout, or
// irc's own) back into irc's YAML model: inputs and parameters (the `%para` lines, or the Loads
// that read them), ops with their attrs and configured strategies, and outputs. Side nodes
// (Load, UpdateState, Depend, MakeTuple, TupleGetItem) are followed, not imported. An operand a
// dump excerpt never defines becomes an input of the type the node's type line gives it.
#include <optional>
#include <string>

#include "ir/diagnostics.h"

namespace irc {

struct ImportOptions {
  std::string name;        // the model's name; default: the dump's IR entry, else the file stem
  int64_t deviceNum = 0;   // 0: the dump's `device_num`
};

// An imported dump: the model but for its parallel block, and the device count when the
// options or the dump's header give one (else the caller measures what the strategies use).
struct ImportedDump {
  std::string name;
  std::optional<int64_t> deviceNum;
  std::string body;  // inputs, parameters, ops and outputs in the model format
  // The model's YAML on `deviceNum` devices (fully_use_devices false for a draft whose strategies
  // are measured on more devices than they use).
  std::string yaml(int64_t deviceNum, bool fullyUseDevices = true) const;
};

// The imported model, or nullopt with located diagnostics in `diags` (its file is the dump).
std::optional<ImportedDump> importMindSporeDump(const std::string& text, const ImportOptions& options, DiagnosticEngine& diags);

}  // namespace irc
