#pragma once
// What every frontend returns (YAML models and plans, ONNX files, MindSpore dumps, a
// config.json's decoder): the graph, the parallel settings it comes with (an ONNX graph's and a
// dump's: none given, the defaults), and the numbers of the parameters it carries (an ONNX
// file's initializers and folded constants; kept when asked for, for `irc verify --inputs`).
#include <map>

#include "ir/graph.h"
#include "plan/parallel_config.h"
#include "ir/tensor_value.h"

namespace irc {

struct LoadedGraph {
  Graph graph;
  ParallelConfig parallel;
  std::map<ValueId, TensorValue> parameterData;
};

}  // namespace irc
