#pragma once
// Runs the whole pipeline in-process, for tests that look at what it produced or verify it.
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "passes/manager/compile_options.h"
#include "verify/spmd_simulator.h"

namespace irc::test {

struct Compiled {
  Graph original;
  Graph global;
  std::map<int64_t, Graph> locals;  // every rank
  std::string errors;               // diagnostics if the model or a pass rejected it
  CompileOptions options;           // what it was compiled with
};

// `tamper` may change the global graph between redistribution and shape slicing; `modelDir` is
// where a plan's `graph: FILE.onnx` is found.
Compiled compileAllRanks(const std::string& yaml, std::optional<SearchMode> mode = std::nullopt,
                         const std::function<void(Graph&)>& tamper = nullptr,
                         std::optional<RedistributionMode> planner = std::nullopt, const std::string& modelDir = "");
VerifyResult verifyCompiled(const Compiled& c, uint64_t seed = 0);

// What layout inference says of one op, in MindSpore's printed forms (semi_auto: only the
// configured op's strategy matters).
struct OpFacts {
  std::string devMatrix;               // (2, 1, 4)
  std::vector<std::string> inputMaps;  // [2, 1]
  std::vector<std::string> outputMaps;
  std::vector<Shape> inputSlices, outputSlices;
  std::vector<std::vector<int>> outputPartial;  // from the right
  std::vector<std::string> forward;             // "AllReduce sum over 0-1-2-3" on rank 0
  std::string errors;                           // diagnostics when the strategy was rejected
};
OpFacts opFacts(const std::string& yaml, const std::string& opName);

// Two pipeline stages of one [4096, 1024] x [1024, 1024] product each on a dgx-h100, `parallel`
// the model's parallel block (its two stages and micro-batches among it).
std::string twoStageProducts(const std::string& parallel);

}  // namespace irc::test
