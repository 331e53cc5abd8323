#pragma once
// Runs passes in order with instrumentations around them (dumps, timing), verifies the graph
// after every pass that changed it, and stops at the first failure.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "passes/manager/pass.h"

namespace irc {

// The pass a hook is called for: its place in the pipeline (dump files are numbered by it), its
// name and its dump's name. The model as loaded is stage 0, before any pass (`loaded()`).
struct PassStage {
  int position = 0;
  std::string_view name;      // "sharding_propagation"
  std::string_view dumpName;  // MindSpore's dump name, "step_parallel_begin"
  static PassStage loaded() { return {0, "parse", "parse"}; }
  static PassStage of(int position, const Pass& pass) { return {position, pass.name(), pass.dumpName()}; }
  bool isLoaded() const { return position == 0; }
};

// Called around passes.
class PassInstrumentation {
 public:
  virtual ~PassInstrumentation() = default;
  virtual void beforePass(const PassStage& /*stage*/) {}
  virtual void afterPass(const PassStage& /*stage*/, const Graph& /*graph*/) {}
  // After a per-rank pass (shape slicing) on rank `rank`'s own graph.
  virtual void afterRankPass(const PassStage& /*stage*/, const Graph& /*graph*/, int64_t /*rank*/) {}
  // After a pass rejected the model (its diagnostics are in the context): `graph` is what the
  // pass was given, with whatever it had set before it stopped; `rank` is kGlobalGraph for a
  // global pass.
  virtual void passFailed(const PassStage& /*stage*/, const Graph& /*graph*/, int64_t /*rank*/) {}
};

inline constexpr int64_t kGlobalGraph = -1;

// A pass that makes one rank's graph from the global one (shape slicing).
using RankPassFactory = std::function<std::unique_ptr<Pass>(int64_t rank)>;

// Passes added at one position form that pipeline stage, run in the order added: the
// instrumentations (dumps, timing) see the stage once, named by its pass with a dump name.
struct ScheduledPass {
  int position;  // the pass's place in the full pipeline (dump files are numbered by it)
  std::unique_ptr<Pass> pass;
};

enum class RunOutcome { Ok, Rejected };

class PassManager {
 public:
  void addPass(int position, std::unique_ptr<Pass> pass);
  // Runs after the global passes, once per rank of `ranks`, each on its own copy of the graph.
  void addRankPass(int position, RankPassFactory factory);
  void setRanks(std::vector<int64_t> ranks) { ranks_ = std::move(ranks); }
  // Called with each rank's final graph (for reports and verification).
  void setRankGraphSink(std::function<void(int64_t, Graph&&)> sink) { rankSink_ = std::move(sink); }
  // Called with the global graph once the global passes are done (before any rank pass).
  void setGlobalGraphHook(std::function<void(const Graph&)> hook) { globalHook_ = std::move(hook); }
  // False: the caller does not read the global graph after run(), so a single rank's graph is
  // made by moving it instead of copying it (the copy is a fifth of a large compile).
  void setKeepGlobalGraph(bool keep) { keepGlobal_ = keep; }
  void addInstrumentation(PassInstrumentation* instrumentation);

  // Throws InternalError ("invalid after pass X: ...") when a pass leaves a malformed graph.
  RunOutcome run(Graph& graph, PassContext& context);

 private:
  // Runs one stage's passes in order (global, or on rank `rank`'s graph, which `graphToRun` makes
  // once the stage has started) with the instrumentations around the whole stage; false when one
  // rejected the model.
  bool runStage(int position, const std::vector<Pass*>& passes, const std::function<Graph&()>& graphToRun, PassContext& context,
                int64_t rank);
  // Whether the graph holds what `pass` needs (the pass contract); an error naming what is
  // missing when not.
  bool satisfied(const Pass& pass, PassContext& context) const;

  std::vector<ScheduledPass> passes_;
  std::vector<std::pair<int, RankPassFactory>> rankPasses_;
  std::vector<int64_t> ranks_;
  std::function<void(int64_t, Graph&&)> rankSink_;
  std::function<void(const Graph&)> globalHook_;
  bool keepGlobal_ = true;
  std::vector<PassInstrumentation*> instrumentations_;
  GraphFacts held_;  // what the global passes run so far gave
};

}  // namespace irc
