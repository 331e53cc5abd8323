#include "ops/op_traits.h"

namespace irc {

bool isNorm(const Op& op) { return op.type == "LayerNorm" || op.type == "RmsNorm"; }
bool isAdd(const Op& op) { return op.type == "Add"; }
bool isMul(const Op& op) { return op.type == "Mul"; }
bool isGateActivation(const Op& op) { return op.type == "SiLU" || op.type == "GeLU" || op.type == "ExactGeLU"; }
bool isProduct(const Op& op) { return op.type == "MatMul"; }
bool isBatchedProduct(const Op& op) { return op.type == "BatchMatMul"; }
bool isLookup(const Op& op) { return op.type == "Gather"; }
bool isExpertRouting(const Op& op) { return op.type == "MoeDispatch" || op.type == "MoeCombine"; }

}  // namespace irc
