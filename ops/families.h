#pragma once
// The families' objects, one file of this folder each (a file may hold a few closely related
// families); the registry (registry.cc) lists them in ops.md's order. The helpers below write a
// family's op definitions.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/limits.h"
#include "ops/op_family.h"
#include "ops/reference_ops.h"
#include "ops/shape_inference.h"

namespace irc::families {

inline OperandSpec tensor(std::string name) { return {std::move(name), OperandKind::Tensor, std::nullopt}; }
inline OperandSpec constant(std::string name, OperandKind kind, std::optional<Attribute> def = std::nullopt) {
  return {std::move(name), kind, std::move(def)};
}
inline AttrSpec attr(std::string name, AttrKind kind, std::optional<Attribute> def) {
  return {std::move(name), kind, std::move(def)};
}

const OpFamilyRules& matMul();
const OpFamilyRules& batchMatMul();
const OpFamilyRules& broadcast();  // Add, Sub, Mul, RealDiv, Maximum, Minimum, Pow, comparisons, logical ops
const OpFamilyRules& select();     // Select (ONNX's Where)
const OpFamilyRules& biasAdd();
const OpFamilyRules& elementwise();  // ReLU, GeLU, Tanh, ... (one function of one operand)
const OpFamilyRules& cast();
const OpFamilyRules& softmax();  // Softmax, LogSoftmax
const OpFamilyRules& reduce();   // ReduceSum, ReduceMean, ReduceMax, ReduceMin
const OpFamilyRules& reshape();
const OpFamilyRules& transpose();
const OpFamilyRules& expandDims();
const OpFamilyRules& squeeze();
const OpFamilyRules& slice();
const OpFamilyRules& broadcastTo();
const OpFamilyRules& gather();
const OpFamilyRules& concat();
const OpFamilyRules& split();
const OpFamilyRules& layerNorm();
const OpFamilyRules& softmaxCrossEntropy();
const OpFamilyRules& oneHot();
const OpFamilyRules& triangle();       // Triu, Tril
const OpFamilyRules& convolution();    // Conv1D, Conv2D, Conv3D
const OpFamilyRules& convTranspose();  // ConvTranspose1D, 2D, 3D (convolution.cc)
const OpFamilyRules& pool();           // MaxPool, AvgPool
const OpFamilyRules& gatherElements();
const OpFamilyRules& gatherND();
const OpFamilyRules& cumulative();  // CumSum
const OpFamilyRules& argReduce();   // Argmax, Argmin
const OpFamilyRules& einsum();
const OpFamilyRules& topK();
const OpFamilyRules& moeDispatch();  // MoeDispatch, MoeCombine (moe_routing.cc)
const OpFamilyRules& moeCombine();
const OpFamilyRules& pad();  // constant, reflect, edge and wrap padding
const OpFamilyRules& scatterElements();
const OpFamilyRules& scatterND();
const OpFamilyRules& resize();            // nearest, linear and cubic interpolation
const OpFamilyRules& opaque();            // an ONNX node irc keeps without semantics
const OpFamilyRules& communication();     // the inserted collectives and _MirrorOperator: no rule
const OpFamilyRules& stridedSlice();      // inserted by the redistribution pass
const OpFamilyRules& pipelineTransfer();  // Send and Receive at pipeline stage boundaries

}  // namespace irc::families
