#pragma once
// One step of a redistribution or a forward op, as the passes plan it and the graph stores it on
// the inserted op: what it does, over which device axes of which mesh, on which local shapes. The
// per-rank arguments (groups, slice bounds) are derived from it for any rank.
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/device_matrix.h"
#include "ir/shape.h"
#include "ir/sharding.h"

namespace irc {

// A step's or plan's cost under MindSpore's model (spec/parallel-semantics.md §4).
struct RedistCost {
  double comm = 0;  // MindSpore's model, in bytes, forward comm corrected
  double compute = 0;
};

struct RedistStep {
  // VocabOffset: the Sub of a vocab-split Gather's masked lookup, whose constant is the first
  // table row the rank holds (its index along `axes` times `rows`).
  // Mirror: a training graph's _MirrorOperator (identity forward; the gradient AllReduce over
  // `axes`, the replica group of a parameter as its consumer reads it).
  // Send/Receive: a pipeline transfer; `mesh` is (stages, devices of a stage) and `axes` {0}, so
  // a rank's group is its pipeline group (the ranks of the same position in every stage).
  enum class Kind { Reshape, Split, Gather, AlltoAll, AllReduce, ReduceScatter, RealDiv, VocabOffset, Mirror, Send, Receive };
  Kind kind = Kind::Split;
  int dim = -1;           // Split: the sliced dim; Gather: the concat dim; AlltoAll: split_dim
  int concatDim = -1;     // AlltoAll: the dim it concatenates (the one giving the axis up)
  std::vector<int> axes;  // device axes of `mesh` the group spans
  ReduceOp reduceOp = ReduceOp::Sum;
  Shape localBefore;  // the local shape entering the step (the same on every rank)
  Shape localAfter;
  DeviceMatrix mesh;  // the (unified) mesh the axes index

  Shape globalAfter;    // the tensor's global shape after the step (changes only at Reshapes)
  int tensorDim = -1;   // the dim of the original tensor the step acts on, for messages
  int64_t divisor = 1;  // RealDiv after ReduceMean's AllReduce
  int64_t rows = 0;     // VocabOffset: table rows per rank
  // Mirror under optimizer parallel: the gradient is reduce-scattered onto the parameter's
  // shards instead of all-reduced.
  bool shardedGradient = false;
  // Send/Receive: the other side's stage (MindSpore's dest_rank / src_rank: the peer's rank in
  // the pipeline group) and the pair's tag.
  int64_t peerStage = -1;
  int64_t srTag = 0;

  int64_t groupSize() const;
  bool operator==(const RedistStep&) const = default;
};

// The ranks of the step's group containing `rank`, ascending.
std::vector<int64_t> stepGroup(const RedistStep& step, int64_t rank);
// StridedSlice bounds of a Split step on `rank`: begin and end per dim of the local tensor.
std::pair<IntTuple, IntTuple> splitBounds(const RedistStep& step, int64_t rank);
// The bytes a step sends are the collectives' home's (ops/collective.h: stepSendBytes).

}  // namespace irc
