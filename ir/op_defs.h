#pragma once
// The op set (spec/ops.md): for every primitive its operands (tensors or constants, in
// MindSpore's order), its attributes with defaults, and its family. The frontend checks models
// against these definitions, the printer uses them to know which operands are constants, and the
// shape inference and sharding rules dispatch on the family.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attribute.h"

namespace irc {

enum class OperandKind {
  Tensor,        // a value
  TensorList,    // every remaining operand is a value (Concat's tuple)
  TensorOrScalar,  // a value, or a scalar tensor constant (OneHot's on/off, RealDiv's divisor)
  Int,           // constant int
  IntOrTuple,    // constant int or tuple of ints (a reduction's axis)
  Tuple,         // constant tuple of ints (Reshape's shape, Transpose's perm, StridedSlice bounds)
  DTypeConst,    // constant type (Cast's target)
};

enum class AttrKind { Bool, Int, Float, IntOrTuple, String };

struct OperandSpec {
  std::string name;
  OperandKind kind = OperandKind::Tensor;
  std::optional<Attribute> defaultValue;  // a constant operand the model may omit
};

struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::Int;
  std::optional<Attribute> defaultValue;  // nullopt: required
};

enum class OpFamily {
  MatMul, BatchMatMul, Broadcast, BiasAdd, Unary, Cast, Softmax, Reduce, Reshape, Transpose,
  ExpandDims, Squeeze, Gather, Concat, Split, LayerNorm, SoftmaxCrossEntropy, OneHot,
  // inserted by the passes, never written in a model
  AllReduce, AllGather, ReduceScatter, AlltoAll, StridedSlice,
  // training graphs: the identity forward, the gradient AllReduce of a replicated parameter
  Mirror,
};

struct OpDef {
  std::string type;
  OpFamily family;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  bool insertedOnly = false;  // communication ops: the passes insert them, models may not

  bool hasAttr(std::string_view name) const;
  const OperandSpec* operand(std::string_view name) const;
  // True when the results form a tuple read with TupleGetItem (even with one element).
  bool tupleResult() const;
};

const OpDef* findOpDef(std::string_view type);
const std::vector<OpDef>& allOpDefs();        // model ops first, in ops.md order
std::vector<std::string> modelOpTypeNames();  // for "did you mean" and --list-ops

}  // namespace irc
