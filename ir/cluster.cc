#include "ir/cluster.h"

#include <algorithm>

namespace irc {
namespace {

const std::pair<Precision, const char*> kPrecisions[] = {
    {Precision::Fp32, "fp32"},
    {Precision::Bf16Mixed, "bf16_mixed"},
    {Precision::Fp16Mixed, "fp16_mixed"},
};

// Each figure's source is in docs/cluster.md (the vendors' datasheets as ../shared/hardware.md
// gathers them; the efficiencies from NVIDIA's and the NCCL tests' published figures).
ClusterDescription dgxA100() {
  ClusterDescription c;
  c.preset = "dgx-a100-80gb";
  c.devicesPerNode = 8;
  c.device = {19.5e12, 156e12, 312e12, 0, 80e9, 2039e9, 108};  // A100 SXM4 80 GB
  c.intraNodeBandwidth = 300e9;                                // NVLink 3 through NVSwitch: 600 GB/s total, 300 each way
  c.intraNodeLatency = 3e-6;
  c.nicsPerNode = 8;  // one ConnectX-6 HDR per GPU
  c.nicGbps = 200;
  c.interNodeLatency = 5e-6;
  c.gemmEfficiency = 0.8;                 // cuBLAS bf16: 75-85 % of the dense peak
  c.intraNodeEfficiency = 230.0 / 300.0;  // nccl-tests AllReduce bus bandwidth in a DGX A100
  c.fusedAttention = false;               // Megatron-LM's A100 runs (2021): a fused softmax, the scores in HBM
  return c;
}

ClusterDescription dgxH100() {
  ClusterDescription c;
  c.preset = "dgx-h100";
  c.devicesPerNode = 8;
  c.device = {67e12, 495e12, 989e12, 1979e12, 80e9, 3.35e12, 132};  // H100 SXM5 80 GB
  c.intraNodeBandwidth = 450e9;                                     // NVLink 4: 900 GB/s total, 450 each way
  c.intraNodeLatency = 3e-6;
  c.nicsPerNode = 8;  // one ConnectX-7 NDR per GPU
  c.nicGbps = 400;
  c.interNodeLatency = 5e-6;
  // cuBLAS bf16 on Hopper's 132 SMs: 705-765 TFLOP/s for products of 8192 x 4096 x 4096 and
  // larger on an H200 (../shared/measured/h200_step_time.json: the H100's SMs, clocks and power),
  // 0.72-0.79 of the peak once wave quantization is taken out; ../shared/hardware.md: 60-75 %.
  c.gemmEfficiency = 0.75;
  c.intraNodeEfficiency = 1.0;  // nccl-tests: 450 GB/s bus bandwidth (NVLink SHARP reduces in the switch)
  c.fusedAttention = true;      // H100-era stacks (Megatron-Core, NeMo, TransformerEngine) run FlashAttention
  return c;
}

ClusterDescription h200() {
  ClusterDescription c = dgxH100();
  c.preset = "h200-sxm";
  c.device.hbmBytes = 141e9;  // H200 SXM: 141 GB HBM3e at 4.8 TB/s, the H100's compute
  c.device.hbmBandwidth = 4.8e12;
  return c;
}

ClusterDescription ascend910b() {
  ClusterDescription c;
  c.preset = "ascend-910b";
  c.devicesPerNode = 8;  // Atlas 800T A2
  // 910B3: ~313 TFLOP/s fp16 (the SKUs range 280-376); no fp32 figure is published: a quarter of
  // fp16, the cube unit's ratio on the 910.
  c.device = {313e12 / 4, 0, 313e12, 0, 64e9, 1.6e12, 20};
  c.intraNodeBandwidth = 196e9;  // HCCS full mesh: 7 links x 56 GB/s both ways, half each way
  c.intraNodeLatency = 3e-6;
  c.nicsPerNode = 8;  // 8 x 200 Gb/s RoCE
  c.nicGbps = 200;
  c.interNodeLatency = 8e-6;  // RoCE
  c.gemmEfficiency = 0.7;
  c.fusedAttention = true;  // MindSpore's FlashAttentionScore on Ascend
  return c;
}

}  // namespace

std::string_view dispatchName(Dispatch d) { return d == Dispatch::Eager ? "eager" : "graph"; }

std::optional<Dispatch> parseDispatch(std::string_view s) {
  if (s == "eager") return Dispatch::Eager;
  if (s == "graph") return Dispatch::Graph;
  return std::nullopt;
}

std::string_view precisionName(Precision p) {
  for (const auto& [value, name] : kPrecisions)
    if (value == p) return name;
  return "fp32";
}

std::optional<Precision> parsePrecision(std::string_view s) {
  for (const auto& [value, name] : kPrecisions)
    if (s == name) return value;
  return std::nullopt;
}

const std::vector<std::string>& precisionNames() {
  static const std::vector<std::string> names = {"fp32", "bf16_mixed", "fp16_mixed"};
  return names;
}

DType computeDType(DType dtype, Precision p) {
  if (dtype != DType::Float32) return dtype;
  switch (p) {
    case Precision::Bf16Mixed: return DType::BFloat16;
    case Precision::Fp16Mixed: return DType::Float16;
    case Precision::Fp32: break;
  }
  return dtype;
}

double ClusterDescription::nicBandwidthPerDevice() const {
  return static_cast<double>(nicsPerNode) * nicGbps * 1e9 / 8 / static_cast<double>(std::max<int64_t>(1, devicesPerNode));
}

double ClusterDescription::matmulPeak(Precision p) const {
  if (p != Precision::Fp32 && device.bf16Flops > 0) return device.bf16Flops;
  return device.fp32Flops > 0 ? device.fp32Flops : device.bf16Flops;
}

const std::vector<std::string>& clusterPresetNames() {
  static const std::vector<std::string> names = {"dgx-a100-80gb", "dgx-h100", "h200-sxm", "ascend-910b"};
  return names;
}

std::optional<ClusterDescription> clusterPreset(std::string_view name) {
  if (name == "dgx-a100-80gb") return dgxA100();
  if (name == "dgx-h100") return dgxH100();
  if (name == "h200-sxm") return h200();
  if (name == "ascend-910b") return ascend910b();
  return std::nullopt;
}

}  // namespace irc
