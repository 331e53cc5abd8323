#include "tests/pipeline_util.h"

#include "frontends/yaml_frontend.h"
#include "passes/pass_manager.h"
#include "passes/pipeline.h"

namespace irc::test {

namespace {
// Injects `tamper` after the last global pass.
class Tamper : public PassInstrumentation {
 public:
  explicit Tamper(std::function<void(Graph&)> fn) : fn_(std::move(fn)) {}
  void afterPass(int position, std::string_view, std::string_view, const Graph& graph) override {
    if (position == 3 && fn_) fn_(const_cast<Graph&>(graph));
  }

 private:
  std::function<void(Graph&)> fn_;
};
}  // namespace

Compiled compileAllRanks(const std::string& yaml, std::optional<SearchMode> mode, const std::function<void(Graph&)>& tamper,
                         std::optional<RedistributionMode> planner) {
  Compiled c;
  DiagnosticEngine diags("m.yaml", yaml);
  auto g = loadModel(yaml, diags, {"m"});
  if (!g) {
    c.errors = diags.renderToString();
    return c;
  }
  if (mode) g->parallel.searchMode = *mode;
  if (planner) g->parallel.redistribution = *planner;
  c.original = *g;
  PassManager manager;
  schedulePipeline(manager, g->parallel);
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < g->parallel.deviceNum; ++r) ranks.push_back(r);
  manager.setRanks(ranks);
  manager.setRankGraphSink([&](int64_t rank, Graph&& local) { c.locals.emplace(rank, std::move(local)); });
  Tamper t(tamper);
  manager.addInstrumentation(&t);
  PassContext context{diags};
  if (manager.run(*g, context) == RunOutcome::Rejected) c.errors = diags.renderToString();
  c.global = std::move(*g);
  return c;
}

VerifyResult verifyCompiled(const Compiled& c, uint64_t seed) {
  VerifyOptions options;
  options.seed = seed;
  return simulateAndCompare(c.original, c.global, c.locals, options);
}

}  // namespace irc::test
