#include "passes/op_families/families.h"

namespace irc {

const OpFamilyRules& rulesOf(OpFamily family) {
  using namespace families;
  switch (family) {
    case OpFamily::Unary:
    case OpFamily::Cast: return elementwise();
    case OpFamily::Broadcast:
    case OpFamily::Select: return broadcast();
    case OpFamily::BiasAdd: return biasAdd();
    case OpFamily::MatMul: return matMul();
    case OpFamily::BatchMatMul: return batchMatMul();
    case OpFamily::Softmax: return softmax();
    case OpFamily::Reduce: return reduce();
    case OpFamily::Reshape: return reshape();
    case OpFamily::Transpose: return transpose();
    case OpFamily::ExpandDims: return expandDims();
    case OpFamily::Squeeze: return squeeze();
    case OpFamily::Gather: return gather();
    case OpFamily::Concat:
    case OpFamily::Split: return concatSplit();
    case OpFamily::LayerNorm: return layerNorm();
    case OpFamily::SoftmaxCrossEntropy: return softmaxCrossEntropy();
    case OpFamily::OneHot: return oneHot();
    case OpFamily::Triangle: return triangle();
    case OpFamily::Opaque: return opaque();
    case OpFamily::Slice: return slice();
    case OpFamily::BroadcastTo: return broadcastTo();
    case OpFamily::AllReduce:
    case OpFamily::AllGather:
    case OpFamily::ReduceScatter:
    case OpFamily::AlltoAll:
    case OpFamily::StridedSlice:
    case OpFamily::Mirror: return communication();
  }
  return communication();
}

}  // namespace irc
