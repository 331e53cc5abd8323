#pragma once
// Where irc's plan converts what a module hands on, in DTensor's words (docs/plan-code.md).
//
// DTensor converts an activation at each consumer's style (a ColwiseParallel with
// input_layouts=Shard(1) gathers its input itself); irc's plan may instead convert a result once
// for all its consumers (a forward op: factor propagation gathers a sequence-parallel norm's
// output once for q, k and v). Such a conversion is DTensor's PrepareModuleOutput on the module
// whose output it is; without one, DTensor would gather three times where irc predicts once.
// And a colwise module whose vocabulary-split output leaves the graph is loss_parallel's case:
// its output stays a DTensor for the loss.
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/manager/compile_options.h"

namespace irc {

struct ModuleOutputConversion {
  std::string module;
  std::string axis;          // the mesh dim it converts over
  std::string from, to;      // DTensor placements on that dim ("Shard(1)", "Replicate()")
  bool keepDTensor = false;  // its consumers are styled Linears (use_local_output=False)
};

struct ModuleOutputs {
  std::vector<ModuleOutputConversion> conversions;  // in execution order
  // Colwise modules whose output leaves the graph split on its last dim (the vocabulary).
  std::vector<std::string> lossParallel;
  // Styled Linears the plan gave no input_layouts whose input arrives otherwise than the style's
  // default (colwise: Replicate(); rowwise: Shard(-1)): the placement it arrives in, by module.
  // DTensor would take the local shard for the default; irc converts from what it is.
  std::map<std::string, std::string> inputLayouts;
  std::vector<std::string> warnings;  // conversions no PrepareModuleOutput expresses
};

// `styles`: the plan's module styles (given or read off the weights); `meshNames`/`meshDims`:
// the mesh the file declares (its dims of more than one device are the placements' positions).
ModuleOutputs moduleOutputConversions(const Graph& graph, const std::vector<Graph::ModuleStyle>& styles,
                                      const std::vector<std::string>& meshNames, const std::vector<int64_t>& meshDims);

}  // namespace irc
