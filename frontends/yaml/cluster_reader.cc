// `cluster:` (top level, in models and plans; docs/cluster.md): a preset and any figure
// overridden, or every figure given.
#include <fmt/format.h>

#include "frontends/yaml/model_loader.h"

namespace irc::model_loading {
namespace {

const std::vector<std::string> kClusterKeys = {"preset",
                                               "devices_per_node",
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
                                               "fused_attention"};
const std::vector<std::string> kPeakKeys = {"fp32", "tf32", "bf16", "fp16", "fp8"};

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
  // A positive figure; `fraction`: at most 1.
  auto figure = [&](const char* key, double& into, bool fraction = false) {
    auto n = reader_.optional(node, key);
    if (!n) return false;
    auto v = reader_.number(*n, fmt::format("cluster.{}", key));
    if (!v) return false;
    if (!(*v > 0) || (fraction && *v > 1)) {
      reader_.error(*n, fmt::format("cluster.{} must be {}; got {}", key, fraction ? "in (0, 1]" : "> 0", *v));
      return false;
    }
    into = *v;
    return true;
  };
  auto count = [&](const char* key, int64_t& into) {
    double v = 0;
    if (!figure(key, v)) return false;
    if (v != static_cast<double>(static_cast<int64_t>(v))) {
      reader_.error(*reader_.optional(node, key), fmt::format("cluster.{} must be a whole number; got {}", key, v));
      return false;
    }
    into = static_cast<int64_t>(v);
    return true;
  };
  count("devices_per_node", c.devicesPerNode);
  if (auto peaks = reader_.optional(node, "peak_flops")) {
    if (reader_.checkMap(*peaks, "'cluster.peak_flops'", kPeakKeys)) {
      double* into[] = {&c.device.fp32Flops, &c.device.tf32Flops, &c.device.bf16Flops, &c.device.bf16Flops, &c.device.fp8Flops};
      for (size_t i = 0; i < kPeakKeys.size(); ++i)
        if (auto n = reader_.optional(*peaks, kPeakKeys[i]))
          if (auto v = reader_.number(*n, "cluster.peak_flops." + kPeakKeys[i])) {
            if (*v > 0) *into[i] = *v;
            else reader_.error(*n, fmt::format("cluster.peak_flops.{} is in FLOP/s and must be > 0; got {}", kPeakKeys[i], *v));
          }
    }
  }
  figure("hbm_bytes", c.device.hbmBytes);
  figure("hbm_bandwidth", c.device.hbmBandwidth);
  count("compute_units", c.device.computeUnits);
  figure("intra_node_bandwidth", c.intraNodeBandwidth);
  figure("intra_node_latency", c.intraNodeLatency);
  count("nics_per_node", c.nicsPerNode);
  figure("nic_gbps", c.nicGbps);
  figure("inter_node_latency", c.interNodeLatency);
  figure("gemm_efficiency", c.gemmEfficiency, true);
  figure("memory_efficiency", c.memoryEfficiency, true);
  figure("intra_node_efficiency", c.intraNodeEfficiency, true);
  figure("inter_node_efficiency", c.interNodeEfficiency, true);
  figure("kernel_launch_seconds", c.kernelLaunchSeconds);
  if (auto n = reader_.optional(node, "fused_attention"))
    if (auto b = reader_.boolean(*n, "cluster.fused_attention")) c.fusedAttention = *b;
  if (!complete) {
    // Without a preset every figure the model needs must be given.
    std::vector<std::string> missing;
    if (!(c.device.bf16Flops > 0 || c.device.fp32Flops > 0)) missing.push_back("peak_flops");
    if (!(c.device.hbmBandwidth > 0)) missing.push_back("hbm_bandwidth");
    if (!(c.intraNodeBandwidth > 0)) missing.push_back("intra_node_bandwidth");
    if (!(c.nicGbps > 0)) missing.push_back("nic_gbps");
    if (c.nicsPerNode < 1) missing.push_back("nics_per_node");
    if (!missing.empty()) {
      reader_.error(node, fmt::format("cluster needs a preset ({}) or {}", fmt::join(clusterPresetNames(), ", "),
                                      fmt::join(missing, ", ")));
      return;
    }
  }
  if (reader_.diags().hasErrors()) return;
  parallel_.cluster = c;
}

}  // namespace irc::model_loading
