#pragma once
// What an op's definition is (spec/ops.md): its operands (tensors or constants, in MindSpore's
// order), its attributes with defaults, and its family, whose object (ops/op_family.h) holds
// everything else about it. Each family's file in this folder defines its ops; the registry
// (ops/registry.cc) lists the families and finds an op's definition by its type name.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attribute.h"
#include "ir/graph.h"

namespace irc {

class OpFamilyRules;

enum class OperandKind {
  Tensor,          // a value
  TensorList,      // every remaining operand is a value (Concat's tuple)
  TensorOrScalar,  // a value, or a scalar tensor constant (OneHot's on/off, RealDiv's divisor)
  Int,             // constant int
  IntOrTuple,      // constant int or tuple of ints (a reduction's axis)
  Tuple,           // constant tuple of ints (Reshape's shape, Transpose's perm, StridedSlice bounds)
  DTypeConst,      // constant type (Cast's target)
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
  // irc's own attribute on a MindSpore primitive (BatchMatMul's `window`): dumps print it only
  // where it is not its default, so a MindSpore graph's dump reads as MindSpore's.
  bool ircOnly = false;
};

enum class OpFamily {
  MatMul,
  BatchMatMul,
  Broadcast,
  Select,
  BiasAdd,
  Unary,
  Cast,
  Softmax,
  Reduce,
  Reshape,
  Transpose,
  ExpandDims,
  Squeeze,
  Gather,
  Concat,
  Split,
  LayerNorm,
  SoftmaxCrossEntropy,
  OneHot,
  // (irc) ONNX's Slice and Expand: MindSpore's Slice(x, begin, size) and BroadcastTo(x, shape)
  Slice,
  BroadcastTo,
  // (irc) ONNX's Trilu: MindSpore's Triu and Tril
  Triangle,
  // (irc) ONNX's Conv (MindSpore's Conv2D, and Conv1D, Conv3D), MaxPool and AveragePool
  Convolution,
  Pool,
  // (irc) ONNX's GatherElements and GatherND (MindSpore's GatherD, GatherNd), and CumSum
  IndexGather,
  Cumulative,
  // (irc) ONNX's ArgMax/ArgMin (MindSpore's Argmax, Argmin) and Einsum
  ArgReduce,
  Einsum,
  // (irc) ONNX's TopK (MindSpore's TopK; axis and largest are irc's) and Pad (constant mode)
  TopK,
  Pad,
  // (irc) ONNX's ScatterElements and ScatterND without a reduction
  Scatter,
  // (irc) ONNX's ConvTranspose (MindSpore's Conv2DTranspose, and 1-D, 3-D)
  ConvTranspose,
  // (irc) ONNX's Resize (MindSpore's ResizeNearestNeighbor, ResizeBilinearV2, ResizeBicubic)
  Resize,
  // (irc) a mixture-of-experts layer's token permutation: MoeDispatch, MoeCombine
  MoeRouting,
  // (irc) an ONNX node kept without semantics (--opaque-unsupported)
  Opaque,
  // inserted by the passes, never written in a model
  AllReduce,
  AllGather,
  ReduceScatter,
  AlltoAll,
  StridedSlice,
  // training graphs: the identity forward, the gradient AllReduce of a replicated parameter
  Mirror,
  // pipeline parallelism: a value's transfer between stages (docs/pipeline.md)
  Send,
  Receive,
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
  int spatialDims = 0;       // Conv1D/2D/3D: how many spatial dims follow N and C
  // How many results the op has: `results`, or the value of the attribute `resultCountAttr`
  // (Split's output_num) when it names one. More than one (or a count attribute) makes a tuple.
  int results = 1;
  std::string resultCountAttr = "";
  // A number written for a scalar operand takes the dtype of the op's first tensor operand from
  // this index on (Add(int_x, 1) adds an int, as MindSpore converts a Python number); -1: a
  // scalar keeps the dtype it was written with (OneHot's on/off values).
  int scalarDtypeFrom = -1;
  // No MindSpore primitive of this name exists (an op of irc's own, such as MoeDispatch): a
  // MindSpore shard() file names its strategy in a comment instead of calling ops.<type>().
  bool notMindSporePrimitive = false;
  const OpFamilyRules* rules = nullptr;  // its family's object; set by the registry

  bool hasAttr(std::string_view name) const;
  // The result count, from the attributes when a count attribute names it (nullopt: absent).
  int resultCount(std::optional<int64_t> countAttrValue) const;
  const OperandSpec* operand(std::string_view name) const;
  // True when the results form a tuple read with TupleGetItem (even with one element).
  bool tupleResult() const;
};

const OpDef* findOpDef(std::string_view type);
// The definition of a graph's op (every op of a graph has one: frontends and passes create only
// known types).
const OpDef& defOf(const Op& op);
inline OpFamily familyOf(const Op& op) { return defOf(op).family; }
// How the op's strategy is written; Cast's strategy is read but ignored (it follows its
// neighbours).
StrategyForm strategyFormOf(const OpDef& def);
bool ignoresConfiguredStrategy(const OpDef& def);
// Reshape: it takes no strategy; its layouts come from its producer and consumer.
inline bool takesLayoutsFromNeighbours(const Op& op) { return strategyFormOf(defOf(op)) == StrategyForm::FromNeighbours; }
const std::vector<OpDef>& allOpDefs();        // model ops first, in ops.md order
std::vector<std::string> modelOpTypeNames();  // for "did you mean" and --list-ops

}  // namespace irc
