#pragma once
// `irc import DUMP.ir`: a MindSpore `parse` / `step_parallel_begin` dump (1.x or 2.x layout, or
// irc's own) read into irc's IR: inputs and parameters (the `%para` lines, or the Loads that
// read them), ops with their attrs and configured strategies, and outputs. Side nodes (Load,
// UpdateState, Depend, MakeTuple, TupleGetItem) are followed, not imported. An operand a dump
// excerpt never defines becomes an input of the type the node's type line gives it. The ops'
// result types are inferred as a model's are, so a node irc cannot read is a located error.
#include <optional>
#include <string>

#include "ir/diagnostics.h"
#include "frontends/loaded_graph.h"
#include "ir/graph.h"

namespace irc {

struct ImportOptions {
  std::string name;       // the model's name; default: the dump's IR entry, else the file stem
  int64_t deviceNum = 0;  // 0: the dump's `device_num`
};

// The imported model with its device count (the options', else the dump's header's, else as many
// as its strategies use: a dump configures ops by strategies only), or nullopt with located
// diagnostics in `diags` (its file is the dump).
std::optional<LoadedGraph> importMindSporeDump(const std::string& text, const ImportOptions& options, DiagnosticEngine& diags);

}  // namespace irc
