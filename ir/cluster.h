#pragma once
// The machine a plan runs on (`cluster:` in models and plans, `--cluster PRESET`; docs/cluster.md):
// what one device computes and holds, how many share a node, and the links within and between
// nodes. Presets carry vendors' datasheet figures; every figure can be overridden. Without a
// cluster, plans are timed by the flat alpha-beta model (CostModel, plan/parallel_config.h).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace irc {

// How the host issues the step's kernels (`cluster.dispatch`, docs/cluster.md): eager PyTorch
// dispatches every op from Python one by one, and the device waits whenever the host is behind;
// a compiled graph (MindSpore's graph mode, CUDA graphs, torch.compile) pays the launch only.
enum class Dispatch { Graph, Eager };
std::string_view dispatchName(Dispatch d);
std::optional<Dispatch> parseDispatch(std::string_view s);

struct DeviceFigures {
  // Dense peak rates in FLOP/s (no structured sparsity); 0 where the device has none.
  double fp32Flops = 0;
  double tf32Flops = 0;
  double bf16Flops = 0;  // also fp16
  double fp8Flops = 0;
  double fp4Flops = 0;      // Blackwell's FP4 (NVFP4, MXFP4)
  double hbmBytes = 0;      // capacity: what the driver reports (80 GiB on an "80 GB" H100)
  double hbmBandwidth = 0;  // bytes/s
  // Streaming multiprocessors (NVIDIA) or AI cores (Ascend): how many output tiles of a matrix
  // product run at once (wave quantization, docs/cluster.md).
  int64_t computeUnits = 1;
};

struct ClusterDescription {
  std::string preset;  // the preset it started from ("" when every figure was given)
  int64_t devicesPerNode = 8;
  // The NVLink (scale-up) domain: how many devices reach each other at `intraNodeBandwidth`.
  // 0: the node (a DGX/HGX board). A GB200 NVL72 rack is one domain of 72 over trays of 4.
  int64_t nvlinkDomain = 0;
  DeviceFigures device;
  // Within a node (NVLink/NVSwitch, HCCS): bytes/s one device sends (one direction), latency.
  double intraNodeBandwidth = 0;
  double intraNodeLatency = 0;
  // Between nodes: NICs per node at `nicGbps` each (one direction), latency per hop.
  int64_t nicsPerNode = 0;
  double nicGbps = 0;
  double interNodeLatency = 0;
  // What real kernels and collectives reach of the datasheet (docs/cluster.md names the sources).
  double gemmEfficiency = 0.8;        // large matrix products, of the dense peak
  double memoryEfficiency = 0.85;     // streaming kernels, of the HBM bandwidth
  double intraNodeEfficiency = 0.77;  // NCCL's bus bandwidth within a node, of the link's
  double interNodeEfficiency = 0.9;   // of the NICs' line rate
  double kernelLaunchSeconds = 4e-6;  // per kernel: launch and the gap between dependent kernels
  // The software stack's attention: fused (FlashAttention: the scores and probabilities stay on
  // chip, cost/attention_fusion.h) or one kernel per op with the scores in HBM.
  bool fusedAttention = false;
  Dispatch dispatch = Dispatch::Graph;
  // Eager dispatch: the host's seconds per op it issues (Python, the dispatcher, autocast,
  // the allocator, the launch call), from the H200's single small kernels (docs/cluster.md).
  double hostOpSeconds = 20e-6;

  // A device's share of its node's NICs, in bytes/s.
  double nicBandwidthPerDevice() const;
  // The devices a group can span and stay on the scale-up links.
  int64_t domainDevices() const { return nvlinkDomain > 0 ? nvlinkDomain : devicesPerNode; }
  double vectorPeak() const { return device.fp32Flops; }
};

}  // namespace irc
