// `cluster:` (top level, in models and plans; docs/cluster.md): a preset and any figure
// overridden, or every figure given.
#include <fmt/format.h>

#include "cost/cluster_presets.h"
#include "frontends/yaml/model_loader.h"
#include "plan/device_precision.h"

namespace irc::model_loading {
namespace {

const std::vector<std::string> kClusterKeys = {"preset",
                                               "devices_per_node",
                                               "nvlink_domain",
                                               "peak_flops",
                                               "hbm_bytes",
                                               "hbm_bandwidth",
                                               "compute_units",
                                               "intra_node_bandwidth",
                                               "intra_node_latency",
                                               "nics_per_node",
                                               "nic_gbps",
                                               "inter_node_latency",
                                               "gemm_efficiency",
                                               "memory_efficiency",
                                               "intra_node_efficiency",
                                               "inter_node_efficiency",
                                               "kernel_launch_seconds",
                                               "fused_attention",
                                               "dispatch",
                                               "host_op_seconds"};
const std::vector<std::string> kPeakKeys = {"fp32", "tf32", "bf16", "fp16", "fp8", "fp4"};

// What hardware does, generously bounded on both sides (a CPU core's GFLOP/s to far past an
// exaFLOP device; a nanosecond to a second of latency): a figure outside is a unit mistake.
struct Range {
  double low, high;  // low 0: any positive figure
  const char* unit;
};
constexpr Range kPerNode{1, 4096, "devices"};
constexpr Range kFlops{1e9, 1e18, "FLOP/s"};
constexpr Range kHbmBytes{1e6, 1e15, "bytes"};
constexpr Range kBandwidth{1e6, 1e15, "bytes/s"};
constexpr Range kComputeUnits{1, 1e6, "units"};
constexpr Range kLatency{1e-9, 1, "s"};
constexpr Range kNicGbps{1e-3, 1e6, "Gb/s"};
constexpr Range kFraction{0, 1, "(a fraction)"};

// A cluster's figures read within what hardware does (a figure outside it is a typo or a unit
// mistake, and would print NaN or absurd seconds): Range's bounds, each documented in
// docs/cluster.md.
class FigureReader {
 public:
  FigureReader(YamlReader& reader, const YamlNode& node) : reader_(reader), node_(node) {}

  bool figure(const char* key, double& into, Range range) {
    auto n = reader_.optional(node_, key);
    if (!n) return false;
    auto v = reader_.number(*n, fmt::format("cluster.{}", key));
    if (!v) return false;
    if (!(*v >= range.low && *v <= range.high) || (range.low == 0 && *v == 0)) {
      reader_.error(*n, fmt::format("cluster.{} is {} {}, outside what hardware does; valid: {} .. {}", key, *v, range.unit,
                                    range.low == 0 ? "> 0" : fmt::format("{:g}", range.low), fmt::format("{:g}", range.high)));
      return false;
    }
    into = *v;
    return true;
  }
  bool count(const char* key, int64_t& into, Range range) {
    double v = 0;
    if (!figure(key, v, range)) return false;
    if (v != static_cast<double>(static_cast<int64_t>(v))) {
      reader_.error(*reader_.optional(node_, key), fmt::format("cluster.{} must be a whole number; got {}", key, v));
      return false;
    }
    into = static_cast<int64_t>(v);
    return true;
  }
  // `peak_flops:` by precision (fp16's peak is bf16's: the datasheets give one figure for both).
  void peaks(DeviceFigures& device) {
    auto peaks = reader_.optional(node_, "peak_flops");
    if (!peaks || !reader_.checkMap(*peaks, "'cluster.peak_flops'", kPeakKeys)) return;
    double* into[] = {&device.fp32Flops, &device.tf32Flops, &device.bf16Flops,
                      &device.bf16Flops, &device.fp8Flops,  &device.fp4Flops};
    for (size_t i = 0; i < kPeakKeys.size(); ++i)
      if (auto n = reader_.optional(*peaks, kPeakKeys[i]))
        if (auto v = reader_.number(*n, "cluster.peak_flops." + kPeakKeys[i])) {
          if (*v >= kFlops.low && *v <= kFlops.high) *into[i] = *v;
          else
            reader_.error(*n, fmt::format("cluster.peak_flops.{} is {} FLOP/s, outside what a device does; valid: {:g} .. {:g}",
                                          kPeakKeys[i], *v, kFlops.low, kFlops.high));
        }
  }

 private:
  YamlReader& reader_;
  const YamlNode& node_;
};

// Without a preset every figure the model needs must be given: those missing.
std::vector<std::string> missingFigures(const ClusterDescription& c) {
  std::vector<std::string> missing;
  if (!(c.device.bf16Flops > 0 || c.device.fp32Flops > 0)) missing.push_back("peak_flops");
  if (!(c.device.hbmBandwidth > 0)) missing.push_back("hbm_bandwidth");
  if (!(c.intraNodeBandwidth > 0)) missing.push_back("intra_node_bandwidth");
  if (!(c.nicGbps > 0)) missing.push_back("nic_gbps");
  if (c.nicsPerNode < 1) missing.push_back("nics_per_node");
  return missing;
}

}  // namespace

void ModelLoader::readCluster(const YamlNode& node) {
  if (!reader_.checkMap(node, "'cluster'", kClusterKeys)) return;
  ClusterDescription c;
  bool complete = false;
  if (auto n = reader_.optional(node, "preset")) {
    auto name = reader_.choice(*n, "cluster.preset", clusterPresetNames());
    if (!name) return;
    c = *clusterPreset(*name);
    complete = true;
  }
  FigureReader figures(reader_, node);
  if (figures.count("devices_per_node", c.devicesPerNode, kPerNode)) {
    // The ranks fill whole nodes, or part of one: 3 per node on 8 devices is no machine.
    int64_t ranks = parallel_.rankCount();
    if (ranks > c.devicesPerNode && ranks % c.devicesPerNode != 0)
      reader_.error(*reader_.optional(node, "devices_per_node"),
                    fmt::format("cluster.devices_per_node {} does not divide the model's {} devices: its nodes would not be "
                                "whole (valid: a divisor of {}, or at least {})",
                                c.devicesPerNode, ranks, ranks, ranks));
  }
  // The NVLink domain holds whole nodes (an NVL72 rack's 18 trays of 4).
  if (figures.count("nvlink_domain", c.nvlinkDomain, kPerNode) && c.nvlinkDomain % c.devicesPerNode != 0)
    reader_.error(*reader_.optional(node, "nvlink_domain"),
                  fmt::format("cluster.nvlink_domain {} does not hold whole nodes of {} devices (valid: a multiple of {})",
                              c.nvlinkDomain, c.devicesPerNode, c.devicesPerNode));
  figures.peaks(c.device);
  figures.figure("hbm_bytes", c.device.hbmBytes, kHbmBytes);
  figures.figure("hbm_bandwidth", c.device.hbmBandwidth, kBandwidth);
  figures.count("compute_units", c.device.computeUnits, kComputeUnits);
  figures.figure("intra_node_bandwidth", c.intraNodeBandwidth, kBandwidth);
  figures.figure("intra_node_latency", c.intraNodeLatency, kLatency);
  figures.count("nics_per_node", c.nicsPerNode, kPerNode);
  figures.figure("nic_gbps", c.nicGbps, kNicGbps);
  figures.figure("inter_node_latency", c.interNodeLatency, kLatency);
  figures.figure("gemm_efficiency", c.gemmEfficiency, kFraction);
  figures.figure("memory_efficiency", c.memoryEfficiency, kFraction);
  figures.figure("intra_node_efficiency", c.intraNodeEfficiency, kFraction);
  figures.figure("inter_node_efficiency", c.interNodeEfficiency, kFraction);
  figures.figure("kernel_launch_seconds", c.kernelLaunchSeconds, kLatency);
  if (auto n = reader_.optional(node, "fused_attention"))
    if (auto b = reader_.boolean(*n, "cluster.fused_attention")) c.fusedAttention = *b;
  if (auto n = reader_.optional(node, "dispatch"))
    if (auto d = reader_.choice(*n, "cluster.dispatch", {"eager", "graph"})) c.dispatch = *parseDispatch(*d);
  figures.figure("host_op_seconds", c.hostOpSeconds, kLatency);
  if (!complete) {
    if (std::vector<std::string> missing = missingFigures(c); !missing.empty()) {
      reader_.error(node, fmt::format("cluster needs a preset ({}) or {}", fmt::join(clusterPresetNames(), ", "),
                                      fmt::join(missing, ", ")));
      return;
    }
  }
  if (reader_.diags().hasErrors()) return;
  if (auto why = whyUnsupported(c, parallel_.precision)) {
    reader_.error(node, fmt::format("{} (valid here: {})", *why, fmt::join(supportedPrecisions(c), ", ")));
    return;
  }
  parallel_.cluster = c;
}

}  // namespace irc::model_loading
