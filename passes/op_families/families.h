#pragma once
// The families' rule objects, one per file of this folder; rulesOf() (registry.cc) maps every
// OpFamily to one of them.
#include "passes/op_families/op_family.h"

namespace irc::families {

const OpFamilyRules& elementwise();     // Unary, Cast
const OpFamilyRules& broadcast();       // Add, Sub, Mul, RealDiv, Maximum, Minimum, Equal
const OpFamilyRules& biasAdd();
const OpFamilyRules& matMul();
const OpFamilyRules& batchMatMul();
const OpFamilyRules& softmax();         // Softmax, LogSoftmax
const OpFamilyRules& reduce();          // ReduceSum, ReduceMean, ReduceMax, ReduceMin
const OpFamilyRules& reshape();
const OpFamilyRules& transpose();
const OpFamilyRules& expandDims();
const OpFamilyRules& squeeze();
const OpFamilyRules& gather();
const OpFamilyRules& concatSplit();     // Concat, Split
const OpFamilyRules& layerNorm();
const OpFamilyRules& softmaxCrossEntropy();
const OpFamilyRules& oneHot();
const OpFamilyRules& slice();
const OpFamilyRules& broadcastTo();
const OpFamilyRules& triangle();        // Triu, Tril
const OpFamilyRules& opaque();          // an ONNX node irc keeps without semantics
const OpFamilyRules& communication();   // the inserted ops: no rule

}  // namespace irc::families
