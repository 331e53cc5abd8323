#pragma once
// How long a collective takes on a cluster (docs/cluster.md): where its group's ranks sit (rank r
// on node r / devices_per_node, MindSpore's and Megatron's order) decides the link it crosses.
// Within one node a ring runs at the intra-node link's bus bandwidth; a group spanning k nodes
// runs at the smaller of that and its ranks' share of the NICs (NCCL's bus-bandwidth model: each
// of a node's g ranks drives its own NIC, and every group of the mesh runs at once), with a
// latency per ring step inside a node and per tree level between nodes. A "node" here is the
// NVLink domain (ClusterDescription::domainDevices(): the node, or a rack of 72 on an NVL72):
// callers pass its size, and each rank still drives its own share of its tray's NICs.
#include <string>
#include <vector>

#include "ir/cluster.h"
#include "ir/device_matrix.h"
#include "ops/collective.h"

namespace irc {

// A group's ranks and the nodes they span (stage 0's block; stages are whole nodes).
struct GroupSpan {
  int64_t ranks = 1;
  int64_t nodes = 1;
  int64_t ranksPerNode() const { return ranks / (nodes > 0 ? nodes : 1); }
};

// The group along `axes` of `mesh` containing rank 0, over domains of `domainDevices`.
GroupSpan groupSpan(const DeviceMatrix& mesh, const std::vector<int>& axes, int64_t domainDevices);
// A point-to-point transfer between rank 0 and the rank `distance` after it.
GroupSpan pairSpan(int64_t distance, int64_t domainDevices);

// The link a group's collective is limited by: its bus bandwidth (bytes/s), the latency of one
// of its steps, and a name for messages ("NVLink within a node", "4 NICs per node across 24
// nodes").
struct LinkShare {
  double busBandwidth = 0;
  double stepLatency = 0;
  std::string description;
};
LinkShare linkOf(const GroupSpan& span, const ClusterDescription& cluster);

// Seconds of a collective whose every rank holds `localBytes` on entry (AllGather: its part;
// AllReduce, ReduceScatter, AlltoAll: its whole buffer; PointToPoint: what it sends).
double collectiveSeconds(CollectiveKind kind, double localBytes, const GroupSpan& span, const ClusterDescription& cluster);

// Megatron-LM's gradient buckets (megatron/core/distributed/distributed_data_parallel.py, the
// default when --ddp-bucket-size is unset): max(40,000,000, 1,000,000 x the data-parallel size)
// elements. A bucket is one AllReduce (ReduceScatter under ZeRO), launched when its last gradient
// is made; PyTorch DDP (25 MiB buckets) and FSDP (a unit's parameters) launch as few.
constexpr double kGradientBucketElements = 40e6;
constexpr double kGradientBucketElementsPerReplica = 1e6;

// Seconds to all-reduce `bytes` of one rank's gradients of `elementBytes` each over `span`, in
// buckets: one collective's latency per bucket, not per parameter (irc summed a latency per
// parameter, which on a 64-device model of 67 small parameters was twice its compute).
double gradientReductionSeconds(double bytes, double elementBytes, const GroupSpan& span, const ClusterDescription& cluster);

// The part of one pipeline Send/Receive of `transferSeconds` a stage waits for. 1F1B
// (`virtualStages` 1) exchanges each micro-batch's activation and gradient as blocking batched
// isend/irecv pairs: all of it. The interleaved schedule overlaps each chunk's exchange with the
// next chunk's compute on the same stage (Megatron-Core's `overlap_p2p_comm`, on by default and
// only with virtual stages, megatron/core/pipeline_parallel/schedules.py; the NIC moves the
// bytes while the SMs compute): what a chunk's compute, `chunkCompute`, does not cover.
inline double exposedTransferSeconds(double transferSeconds, double chunkCompute, int64_t virtualStages) {
  if (virtualStages <= 1) return transferSeconds;
  return transferSeconds > chunkCompute ? transferSeconds - chunkCompute : 0.0;
}

}  // namespace irc
