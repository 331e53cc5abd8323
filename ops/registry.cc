// The registry: every family, in the order its ops are listed (spec/ops.md: model ops first,
// then the ops the passes insert). An op's type name finds its definition (findOpDef), and the
// definition its family's object.
#include <algorithm>
#include <array>
#include <functional>

#include "ops/families.h"

namespace irc {

const std::vector<OpDef>& allOpDefs() {
  using namespace families;
  static const std::vector<OpDef> defs = [] {
    const std::array<std::reference_wrapper<const OpFamilyRules>, 41> families = {matMul(),
                                                                                  batchMatMul(),
                                                                                  broadcast(),
                                                                                  select(),
                                                                                  biasAdd(),
                                                                                  elementwise(),
                                                                                  cast(),
                                                                                  softmax(),
                                                                                  reduce(),
                                                                                  reshape(),
                                                                                  transpose(),
                                                                                  expandDims(),
                                                                                  squeeze(),
                                                                                  slice(),
                                                                                  broadcastTo(),
                                                                                  gather(),
                                                                                  concat(),
                                                                                  split(),
                                                                                  layerNorm(),
                                                                                  softmaxCrossEntropy(),
                                                                                  oneHot(),
                                                                                  triangle(),
                                                                                  convolution(),
                                                                                  convTranspose(),
                                                                                  pool(),
                                                                                  gatherElements(),
                                                                                  gatherND(),
                                                                                  cumulative(),
                                                                                  argReduce(),
                                                                                  einsum(),
                                                                                  topK(),
                                                                                  moeDispatch(),
                                                                                  moeCombine(),
                                                                                  pad(),
                                                                                  scatterElements(),
                                                                                  scatterND(),
                                                                                  resize(),
                                                                                  opaque(),
                                                                                  communication(),
                                                                                  stridedSlice(),
                                                                                  pipelineTransfer()};
    std::vector<OpDef> all;
    for (const OpFamilyRules& family : families) {
      size_t first = all.size();
      family.define(all);
      for (size_t i = first; i < all.size(); ++i) all[i].rules = &family;
    }
    // Model ops first (ops.md's first table), then the inserted ones, each in family order.
    std::stable_partition(all.begin(), all.end(), [](const OpDef& d) { return !d.insertedOnly; });
    return all;
  }();
  return defs;
}

}  // namespace irc
