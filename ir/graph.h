#pragma once
// The operator graph: values (inputs, parameters, op results) and ops. Ids are dense indices;
// `order` is the execution and print order (topological, ties by model order). Iteration is
// always over vectors, never over hash containers, so everything derived from a Graph is
// deterministic.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/diagnostics.h"
#include "ir/heap_optional.h"
#include "ir/heap_default.h"
#include "ir/op_parallel.h"
#include "ir/redist_step.h"
#include "ir/shape.h"
#include "ir/sharding.h"
#include "ir/tensor_layout.h"

namespace irc {

using ValueId = int32_t;
using OpId = int32_t;
constexpr int32_t kNoId = -1;

struct TensorType {
  DType dtype = DType::Float32;
  Shape shape;
  bool operator==(const TensorType&) const = default;
};

enum class ValueKind { Input, Parameter, OpResult };

// A value of a rank's local graph as a slice of the global tensor.
struct RankSlice {
  Shape globalShape;
  std::vector<std::pair<int64_t, int64_t>> ranges;  // the rank's [begin, end) per dim of it
};

struct Value {
  std::string name;  // model name; a later result of a multi-output op is `op:1`
  TensorType type;
  ValueKind kind = ValueKind::OpResult;
  OpId producer = kNoId;
  int resultIndex = 0;
  // A parameter the optimizer updates (torch's requires_grad). False for what an ONNX export
  // holds but does not train: its buffers (rotary tables, BatchNorm statistics) and the masks
  // and constants the exporter or the import folded.
  bool trainable = true;
  SourceLoc loc;
  HeapOptional<TensorSharding> sharding;  // an input's or parameter's annotation
  // After layout inference, the layout consumers see the value in: an input's or parameter's
  // held layout (its annotation, else what its first consumer needs), a model op result's after
  // the op's forward ops and any output constraint. Before it, only a result propagation holds
  // apart from what its op computes (OpSharding::conversions) has one: that decision, which
  // layout inference reads. An inserted op's result has none: it is the model value behind it,
  // moved (layoutOfValue walks back to it).
  HeapOptional<TensorLayout> layout;
  // In a rank's local graph, for inputs, parameters and graph outputs: what the dump's `# slice`
  // comments print. On the heap, made on first write: no other value has one.
  HeapDefault<RankSlice> rankSlice;
};

// What an inserted op does for the model op that owns it.
enum class InsertedRole {
  None,            // a model op
  Redistribution,  // converts an operand of its owner (the consumer) to the layout it needs
  ForwardOp,       // completes or converts a result of its owner (the producer) for all consumers
  ReplaceGraph,    // part of its owner's local replacement (a masked lookup, a class offset)
  Mirror,          // a training graph's _MirrorOperator before its owner
  Transfer,        // a pipeline Send (owner: the producer) or Receive (owner: the first consumer)
};

// An operand is a value or a constant (Reshape's shape, Cast's dtype, a reduction's axis, ...).
struct Operand {
  ValueId value = kNoId;
  std::optional<Attribute> constant;
  SourceLoc loc;

  static Operand ofValue(ValueId v, SourceLoc loc = {}) { return {v, std::nullopt, loc}; }
  static Operand ofConstant(Attribute a, SourceLoc loc = {}) { return {kNoId, std::move(a), loc}; }
  bool isValue() const { return value != kNoId; }
};

struct Op {
  std::string name;  // unique; printed as %N(name) unless printedName is set
  // Set where a pass replaced a model op in place by a sequence it belongs to (a vocab-split
  // Gather is node 4 of its replace graph, `<op>.replace.4`); the op keeps its name elsewhere.
  std::string printedName;
  std::string type;          // MindSpore primitive name
  std::string instanceName;  // {instance name: ...}
  std::string msName;        // the model's `ms_name`: MindSpore's node name, the strategy checkpoint's key
  std::vector<Operand> operands;
  AttrMap attrs;
  std::vector<ValueId> results;
  SourceLoc loc;
  std::vector<std::pair<std::string, SourceLoc>> attrLocs;  // where each model attr was written
  int modelIndex = -1;                                      // position in the model's op list; -1 for inserted ops
  // The torch module it came from (an ONNX export's node metadata or TorchScript name): an index
  // into Graph::modulePaths, shared by the ops of one module; -1 for none.
  int modulePath = -1;
  // What the model configured. On the heap, made on first write (ir/heap_default.h): only the
  // few configured model ops have one, and inline it made every op 112 bytes larger.
  HeapDefault<OpAnnotation> annotation;
  std::string reason;                     // inserted ops: why the pass inserted it (the `# reason:` line)
  HeapDefault<OpParallelState> parallel;  // what the parallel passes decided (made on first write)
  // Inserted communication / redistribution ops: the step they perform, from which each rank's
  // groups and slice bounds follow. Immutable and shared: the ops of one step (AllGather, Split,
  // Concat), of edges with the same plan, and every copy of the graph hold one object.
  std::shared_ptr<const RedistStep> step;
  // Inserted ops: the model op they belong to and what they do for it.
  OpId owner = kNoId;
  InsertedRole role = InsertedRole::None;
  // The pipeline stage that runs it (0 without pipeline parallelism): a model op's from the
  // model's `stages:`, an inserted op's from the op it works for (a Send's, its producer's).
  int32_t stage = 0;
  // With virtual stages (`virtual_stages`): which of its stage's model chunks it belongs to; its
  // virtual stage is chunk * pipeline_stages + stage.
  int32_t chunk = 0;

  bool inserted() const { return modelIndex < 0; }

  SourceLoc attrLoc(std::string_view attr) const;
  // Its definition, family and rules are the ops floor's: defOf(op) (ops/op_defs.h).
};

// One value crossing pipeline stages: the Send on the producing stage's ranks and the Receive
// on the consuming stage's, paired by their tag.
struct PipelineTransfer {
  OpId send = kNoId, receive = kNoId;
  ValueId value = kNoId;  // the value sent (the producer's, after its forward ops)
  int32_t fromStage = 0, toStage = 0;
  int64_t tag = 0;
  double bytesPerRank = 0;  // each sending rank's local slice
};

// One edge's redistribution, for reports and `irc explain`.
struct RedistributionRecord {
  ValueId value = kNoId;  // the value as produced
  std::string producer;   // op or input name
  std::string consumer;
  int inputIndex = 0;  // the consumer's operand index
  TensorLayout from, to;
  std::vector<OpId> ops;  // the inserted ops, in order
  std::vector<std::string> reasons;
  std::string reason;  // one line for the whole edge
};

struct SearchSummary;  // plan/search_summary.h: the search's account, which the graph carries

class Graph {
 public:
  std::string name;
  std::vector<Value> values;
  std::vector<Op> ops;
  std::vector<ValueId> inputs;      // in model order
  std::vector<ValueId> parameters;  // in model order, after the inputs when numbered
  std::vector<ValueId> outputs;
  std::vector<OpId> order;               // execution / print order
  std::vector<std::string> modulePaths;  // "m.model.layers.0.self_attn.q_proj", by Op::modulePath
  // A plan's `modules:` styles, one per module styled, in the plan's order (irc --torch-out
  // writes them back as DTensor's parallelize_module plan).
  struct ModuleStyle {
    std::string module;                       // the module's path
    std::string style;                        // colwise, rowwise, sequence_parallel, replicate
    std::string axis;                         // the mesh axis it shards over
    std::string inputLayouts, outputLayouts;  // DTensor placements as given ("Shard(1)"), "" if not
  };
  std::vector<ModuleStyle> moduleStyles;
  // False while shapes are global (up to step_parallel_end): inserted ops then carry the global
  // type of the value they move and no rank's groups or bounds (OpForRank derives a rank's).
  // True in a rank's local graph (validate), whose inserted ops carry its rank's.
  bool localShapes = false;
  int64_t rank = 0;                                   // the rank of a local graph
  std::vector<RedistributionRecord> redistributions;  // per edge, in print order
  // With pipeline stages (set where the Send/Receive pairs are inserted): the ranks of a stage;
  // 0 without. A rank's local graph: its stage (its order holds that stage's ops only).
  int64_t stageDevices = 0;
  int32_t stage = 0;
  // Send/Receive pairs at the pipeline's stage boundaries, in order (docs/pipeline.md).
  std::vector<PipelineTransfer> transfers;
  // search_mode auto's account of the plan (shared by the graph's copies).
  std::shared_ptr<const SearchSummary> search;

  ValueId addGraphInput(std::string name, TensorType type, ValueKind kind, SourceLoc loc);
  // Adds the op and one result value per given type; returns its id. Does not touch `order`.
  OpId addOp(Op op, const std::vector<TensorType>& resultTypes);

  const Value& value(ValueId id) const { return values.at(id); }
  Value& value(ValueId id) { return values.at(id); }
  const Op& op(OpId id) const { return ops.at(id); }
  Op& op(OpId id) { return ops.at(id); }

  // By name (`op:0` is the op's first result); a linear scan, for tests and tools, not passes.
  std::optional<ValueId> findValue(std::string_view valueName) const;
  // The op's torch module path, "" when it has none.
  const std::string& moduleOf(const Op& op) const;
};

// Consumers of every value, in `order` (an op using a value twice is listed once per use).
struct Use {
  OpId op;
  int operandIndex;
};
std::vector<std::vector<Use>> computeUses(const Graph& graph);

}  // namespace irc
