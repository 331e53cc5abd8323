#pragma once
// `irc verify`'s engine: runs the single-device graph and every rank's local graph (the ones
// shape slicing made, nothing simplified) in lockstep on seeded random inputs, the collectives
// exchanging data by their groups, and compares every model op's completed result on every
// rank with the matching block of the single-device result.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor_value.h"

namespace irc {

struct VerifyOptions {
  uint64_t seed = 0;
  double rtol = 1e-9;
  double atol = 1e-12;
  int64_t maxElements = int64_t{1} << 28;  // of the program's values live at once (docs/limits.md)
  // Values for inputs and parameters (`irc verify --inputs`, an ONNX file's own weights); the
  // others are seeded.
  const std::map<ValueId, TensorValue>* given = nullptr;
  // Keep the single-device program's graph outputs in VerifyResult::outputs (`--expect`).
  bool keepOutputs = false;
};

// The most elements a program's values hold at once when each lives from its producer to its
// last read (saturating at the tensor limit).
int64_t peakLiveElements(const Graph& graph);

struct VerifyResult {
  bool ok = true;
  size_t comparedValues = 0;
  double maxAbsError = 0;
  double maxRelError = 0;
  // The first mismatch, in execution order (then lowest rank, then first element).
  std::string op;
  int64_t rank = -1;
  std::vector<int64_t> element;
  double got = 0, expected = 0;
  std::string problem;                     // a reference error (an index outside a table), if the run could not finish
  std::map<ValueId, TensorValue> outputs;  // with keepOutputs: the reference's graph outputs
};

// `original`: the model as loaded; `global`: after redistribution; `locals`: every rank's graph
// after shape slicing, indexed by rank.
VerifyResult simulateAndCompare(const Graph& original, const Graph& global, const std::map<int64_t, Graph>& locals,
                                const VerifyOptions& options);

}  // namespace irc
