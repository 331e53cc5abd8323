#pragma once
// The JSON report (spec/report.md, schema_version 1): every op with its strategy, origin, layouts
// and forward ops; every value's layout; every edge's redistribution; totals. Built from the
// global graph after redistribution, for one rank's groups and bounds.
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/graph.h"
#include "passes/manager/compile_options.h"
#include "cost/memory_estimate.h"
#include "frontends/loaded_graph.h"

namespace irc {

// Writes the report to `out` as it goes (each op's object built and written on its own), in
// nlohmann::json's dump() layout: compact with indent < 0, else `indent` spaces a level; ends
// with a line break.
// `memory`: the rank's memory estimate when the caller has it (else it is computed here);
// `facts`: what the frontend knows beyond the graph (a config.json's active parameters).
void writeReport(std::ostream& out, const Graph& graph, const CompileOptions& options, int64_t rank, int indent,
                 const std::optional<MemoryEstimate>* memory = nullptr, const ModelFacts& facts = {});
// The same, parsed (for tests and tools that read it back).
nlohmann::ordered_json buildReport(const Graph& graph, const CompileOptions& options, int64_t rank);

// Counts for the end-of-compile summary.
struct CompileTotals {
  std::map<std::string, int> insertedByType;
  double commBytesPerRank = 0;
  double paramBytesPerRank = 0;
  double gradBytesPerRank = 0;  // training graphs: the mirrors' gradient AllReduces
};
// Every inserted op and parameter slice of the graph, at their declared dtypes; or, given the
// options, what `rank` moves and holds: its pipeline stage's, at the precision it computes in.
CompileTotals compileTotals(const Graph& graph, const CompileOptions* options = nullptr, int64_t rank = 0);

// The rank's memory (cost/memory_estimate.h) where every model op has its layouts; the
// report's `memory` member, with the budget's verdict when one is set.
// A pipelined compile's: the stage of `rank` (default the global rank).
std::optional<MemoryEstimate> memoryOf(const Graph& graph, const CompileOptions& options,
                                       std::optional<int64_t> rank = std::nullopt);
nlohmann::ordered_json memoryJson(const MemoryEstimate& memory, const CompileOptions& options);

}  // namespace irc
