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
  MatMul, BatchMatMul, Broadcast, Select, BiasAdd, Unary, Cast, Softmax, Reduce, Reshape, Transpose,
  ExpandDims, Squeeze, Gather, Concat, Split, LayerNorm, SoftmaxCrossEntropy, OneHot,
  // (irc) ONNX's Slice and Expand: MindSpore's Slice(x, begin, size) and BroadcastTo(x, shape)
  Slice, BroadcastTo,
  // (irc) ONNX's Trilu: MindSpore's Triu and Tril
  Triangle,
  // (irc) an ONNX node kept without semantics (--opaque-unsupported)
  Opaque,
  // inserted by the passes, never written in a model
  AllReduce, AllGather, ReduceScatter, AlltoAll, StridedSlice,
  // training graphs: the identity forward, the gradient AllReduce of a replicated parameter
  Mirror,
};

// How an op's strategy is written (parallel-semantics.md §2).
enum class StrategyForm {
  PerOperand,      // one tuple per tensor operand
  OnOutput,        // MindSpore's OneHot: the output's tuple, then () per scalar operand
  FromNeighbours,  // Reshape: takes none, its layouts come from its producer and consumer
};

// What a reduction combines (the Reduce family's ops, and how their partial results combine).
enum class Reduction { None, Sum, Mean, Max, Min };

using UnaryKernel = double (*)(double);
using BinaryKernel = double (*)(double, double);

struct OpDef {
  std::string type;
  OpFamily family;
  std::vector<OperandSpec> operands;
  std::vector<AttrSpec> attrs;
  bool insertedOnly = false;  // communication ops: the passes insert them, models may not
  // What sets the op apart inside its family, for the reference interpreter, shape inference
  // and the family's rules (so that nothing compares type names).
  UnaryKernel unary = nullptr;    // Unary family: the elementwise function
  BinaryKernel binary = nullptr;  // Broadcast family: the elementwise function
  Reduction reduction = Reduction::None;
  bool boolResult = false;   // Equal: the result is Bool
  bool logarithmic = false;  // LogSoftmax
  bool upper = false;        // Triu (keeps the upper triangle); Tril keeps the lower

  bool hasAttr(std::string_view name) const;
  const OperandSpec* operand(std::string_view name) const;
  // True when the results form a tuple read with TupleGetItem (even with one element).
  bool tupleResult() const;
};

const OpDef* findOpDef(std::string_view type);
// The strategy form of a family; Cast's strategy is read but ignored (it follows its neighbours).
StrategyForm strategyFormOf(OpFamily family);
bool ignoresConfiguredStrategy(OpFamily family);
const std::vector<OpDef>& allOpDefs();        // model ops first, in ops.md order
std::vector<std::string> modelOpTypeNames();  // for "did you mean" and --list-ops

}  // namespace irc
