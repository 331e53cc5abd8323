#pragma once
// The pass contract. A pass transforms the graph and says how it changed it; a failure
// always comes with a diagnostic in the context's engine (a model the pass must reject). Passes
// never print, open files or read flags: dumps and timing are instrumentations of the manager,
// options arrive as typed structs.
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
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

// What a pass needs the graph to hold when it starts, and what it leaves there: the pipeline's
// contract, which the manager checks before each pass (a schedule missing a pass that gives
// what a later one needs — `--passes layout_inference` alone — is refused there, named).
enum class GraphFact : unsigned {
  Strategies = 1u << 0,     // every op's sharding (strategy propagation)
  Layouts = 1u << 1,        // every op's and value's tensor layouts (layout inference)
  Communication = 1u << 2,  // forward ops, redistributions, transfers inserted (redistribution)
};
class GraphFacts {
 public:
  GraphFacts() = default;
  GraphFacts(std::initializer_list<GraphFact> facts) {
    for (GraphFact f : facts) bits_ |= static_cast<unsigned>(f);
  }
  bool has(GraphFact f) const { return bits_ & static_cast<unsigned>(f); }
  GraphFacts without(GraphFacts other) const { return GraphFacts(bits_ & ~other.bits_); }
  GraphFacts with(GraphFacts other) const { return GraphFacts(bits_ | other.bits_); }
  bool empty() const { return bits_ == 0; }
  // "strategies, layouts"
  std::string text() const;

 private:
  explicit GraphFacts(unsigned bits) : bits_(bits) {}
  unsigned bits_ = 0;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;      // e.g. "sharding_propagation"
  virtual std::string_view dumpName() const = 0;  // MindSpore's dump name, e.g. "step_parallel_begin"
  virtual GraphFacts needs() const { return {}; }
  virtual GraphFacts gives() const { return {}; }
  virtual PassStatus run(Graph& graph, PassContext& context) = 0;
};

// A pass from a function, for the thin ones: a step of a stage (no dump name of its own, "") or
// a stage.
struct PassSpec {
  std::string_view name, dumpName;
  GraphFacts needs, gives;
};
std::unique_ptr<Pass> makePass(PassSpec spec, std::function<PassStatus(Graph&, PassContext&)> run);

}  // namespace irc
