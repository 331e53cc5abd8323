#pragma once
// What kind of op an op is, by its type: the questions the training plan's code (plan/, cost/,
// search/) asks of a model's ops, answered here so that no code above ops/ names an op type.
#include "ir/graph.h"

namespace irc {

bool isNorm(const Op& op);            // LayerNorm, RmsNorm
bool isAdd(const Op& op);             // the elementwise Add (a residual's)
bool isMul(const Op& op);             // the elementwise Mul (a gated unit's gate times its value)
bool isGateActivation(const Op& op);  // SiLU, GeLU, ExactGeLU: the activations of SwiGLU and GeGLU
bool isProduct(const Op& op);         // MatMul: a 2-D (or batched-by-broadcast) product
bool isBatchedProduct(const Op& op);  // BatchMatMul: attention's, the grouped experts'
bool isLookup(const Op& op);          // Gather: an embedding table's rows by index
bool isExpertRouting(const Op& op);   // MoeDispatch, MoeCombine: tokens to their experts and back

}  // namespace irc
