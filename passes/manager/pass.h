#pragma once
// The pass contract. A pass transforms the graph and says how it changed it; a failure
// always comes with a diagnostic in the context's engine (a model the pass must reject). Passes
// never print, open files or read flags: dumps and timing are instrumentations of the manager,
// options arrive as typed structs.
#include <string_view>

#include "ir/diagnostics.h"
#include "ir/graph.h"

namespace irc {

// Annotated: the pass set only parallel state (strategies, layouts) — ops, values, types and order
// are as they were, so the manager does not run the structural verifier again (on a 100k-op
// graph it re-infers every shape; the next pass that does change the structure verifies all of
// it anyway).
enum class PassStatus { Unchanged, Annotated, Changed, Failed };

struct PassContext {
  DiagnosticEngine& diags;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;      // e.g. "sharding_propagation"
  virtual std::string_view dumpName() const = 0;  // MindSpore's dump name, e.g. "step_parallel_begin"
  virtual PassStatus run(Graph& graph, PassContext& context) = 0;
};

}  // namespace irc
