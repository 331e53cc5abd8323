#pragma once
// Runs passes in order with instrumentations around them (dumps, timing), verifies the graph
// after every pass that changed it, and stops at the first failure.
#include <memory>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace irc {

// Called around passes; position 0 with dump name "parse" is the model as loaded.
class PassInstrumentation {
 public:
  virtual ~PassInstrumentation() = default;
  virtual void beforePass(int /*position*/, std::string_view /*passName*/) {}
  virtual void afterPass(int /*position*/, std::string_view /*passName*/, std::string_view /*dumpName*/,
                         const Graph& /*graph*/) {}
};

struct ScheduledPass {
  int position;  // the pass's place in the full pipeline (dump files are numbered by it)
  std::unique_ptr<Pass> pass;
};

enum class RunOutcome { Ok, Rejected };

class PassManager {
 public:
  void addPass(int position, std::unique_ptr<Pass> pass);
  void addInstrumentation(PassInstrumentation* instrumentation);

  // Throws InternalError ("invalid after pass X: ...") when a pass leaves a malformed graph.
  RunOutcome run(Graph& graph, PassContext& context);

 private:
  std::vector<ScheduledPass> passes_;
  std::vector<PassInstrumentation*> instrumentations_;
};

}  // namespace irc
