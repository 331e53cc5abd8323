#pragma once
// What every frontend returns (YAML models and plans, ONNX files, MindSpore dumps, a
// config.json's decoder): the graph, the parallel settings it comes with (an ONNX graph's and a
// dump's: none given, the defaults), and the numbers of the parameters it carries (an ONNX
// file's initializers and folded constants; kept when asked for, for `irc verify --inputs`), and
// what the frontend knows of the model beyond its graph.
#include <map>

#include "ir/graph.h"
#include "plan/parallel_config.h"
#include "ir/tensor_value.h"

namespace irc {

// What a frontend knows of the model beyond its graph, for the dumps that describe it.
struct ModelFacts {
  // The weights one token's forward pass multiplies with, where the frontend knows the routing (a
  // config.json's mixture of experts); -1: every trainable parameter, a lookup table's one row.
  int64_t activeParameters = -1;
  // Whose modules the graph's module paths name: false, the module torch.onnx.export saw (an
  // export's node metadata); true, the model transformers builds from a config.json
  // (docs/config-json.md).
  bool modulesFromConfig = false;
};

struct LoadedGraph {
  Graph graph;
  ParallelConfig parallel;
  std::map<ValueId, TensorValue> parameterData;
  ModelFacts facts;
};

}  // namespace irc
