#include "cost/cluster_presets.h"

namespace irc {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Each figure's source is in docs/cluster.md (the vendors' datasheets as ../shared/hardware.md
// gathers them; the efficiencies from NVIDIA's and the NCCL tests' published figures).
ClusterDescription dgxA100() {
  ClusterDescription c;
  c.preset = "dgx-a100-80gb";
  c.devicesPerNode = 8;
  c.device = {19.5e12, 156e12, 312e12, 0, 0, 81920 * kMiB, 2039e9, 108};  // A100 SXM4 80 GB: 80 GiB visible
  c.intraNodeBandwidth = 300e9;  // NVLink 3 through NVSwitch: 600 GB/s total, 300 each way
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
  c.device = {67e12, 495e12, 989e12, 1979e12, 0, 81559 * kMiB, 3.35e12, 132};  // H100 SXM5 80 GB: 81,559 MiB visible
  c.intraNodeBandwidth = 450e9;                                                // NVLink 4: 900 GB/s total, 450 each way
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
  c.device.hbmBytes = 143771 * kMiB;  // H200 SXM: 141 GB HBM3e (143,771 MiB visible) at 4.8 TB/s, the H100's compute
  c.device.hbmBandwidth = 4.8e12;
  return c;
}

ClusterDescription ascend910b() {
  ClusterDescription c;
  c.preset = "ascend-910b";
  c.devicesPerNode = 8;  // Atlas 800T A2
  // 910B3: ~313 TFLOP/s fp16 (the SKUs range 280-376); no fp32 figure is published: a quarter of
  // fp16, the cube unit's ratio on the 910.
  c.device = {313e12 / 4, 0, 313e12, 0, 0, 64 * 1024 * kMiB, 1.6e12, 20};  // 64 GB HBM2e: four 16 GiB stacks
  c.intraNodeBandwidth = 196e9;  // HCCS full mesh: 7 links x 56 GB/s both ways, half each way
  c.intraNodeLatency = 3e-6;
  c.nicsPerNode = 8;  // 8 x 200 Gb/s RoCE
  c.nicGbps = 200;
  c.interNodeLatency = 8e-6;  // RoCE
  c.gemmEfficiency = 0.7;
  c.fusedAttention = true;  // MindSpore's FlashAttentionScore on Ascend
  return c;
}

// Blackwell (B200 / B300 on an HGX board, GB200 / GB300 in an NVL72 rack). The figures are the
// vendor's (../shared/hardware.md); where none is published the Hopper figure stands and
// docs/cluster.md says so: a GEMM's sustained fraction of the peak (0.75, no Blackwell kernel was
// measured here), NCCL's bus bandwidth over NVLink 5 (NVLink SHARP reduces in the switch, as on
// Hopper), launch and latency.
// FP32 and TF32 (half the BF16 rate) from NVIDIA's HGX B200/B300 and GB200/GB300 NVL72 tables.
ClusterDescription blackwell(const char* preset, double fp32, double bf16, double fp4, double hbmMiB, double nicGbps) {
  ClusterDescription c = dgxH100();
  c.preset = preset;
  c.device = {fp32, bf16 / 2, bf16, 2 * bf16, fp4, hbmMiB * kMiB, 8e12, 148};
  c.intraNodeBandwidth = 900e9;  // NVLink 5: 1.8 TB/s total, 900 GB/s each way
  c.nicGbps = nicGbps;
  return c;
}

// An NVL72 rack: compute trays of 4 GPUs with one NIC each, all 72 in one NVLink domain.
ClusterDescription nvl72(ClusterDescription c) {
  c.devicesPerNode = 4;
  c.nicsPerNode = 4;
  c.nvlinkDomain = 72;
  return c;
}

ClusterDescription dgxB200() {
  // B200 (HGX/DGX, 1,000 W): 2,250 / 4,500 (FP8) / 9,000 (FP4) TFLOP/s dense, 180 GB HBM3e
  // (183,359 MiB visible) at 8 TB/s, 148 SMs; 8 per node; 8 x 400 Gb/s ConnectX-7.
  return blackwell("dgx-b200", 75e12, 2250e12, 9000e12, 183359, 400);
}

ClusterDescription gb200Nvl72() {
  // GB200 NVL72: 2,500 / 5,000 / 10,000 TFLOP/s, 186 GB (189,471 MiB), a compute tray of 4 GPUs
  // with one 400 Gb/s ConnectX-7 each, 72 GPUs in one NVLink domain.
  return nvl72(blackwell("gb200-nvl72", 80e12, 2500e12, 10000e12, 189471, 400));
}

ClusterDescription dgxB300() {
  // B300 (HGX): 2,250 / 4,500 / ~13,500 TFLOP/s, 270 GB (275,040 MiB); 8 x 800 Gb/s ConnectX-8.
  return blackwell("dgx-b300", 75e12, 2250e12, 13500e12, 275040, 800);
}

ClusterDescription gb300Nvl72() {
  // GB300 NVL72: 2,500 / 5,000 / 15,000 TFLOP/s, ~279 GB (284,208 MiB), 800 Gb/s ConnectX-8 a GPU.
  return nvl72(blackwell("gb300-nvl72", 80e12, 2500e12, 15000e12, 284208, 800));
}

ClusterDescription dgxH800() {
  // H800 SXM: the H100's compute and HBM, NVLink cut to 400 GB/s total (200 each way), of which
  // DeepSeek-V3's report (§3.2.1) achieves about 160 GB/s; 8 x 400 Gb/s InfiniBand.
  ClusterDescription c = dgxH100();
  c.preset = "dgx-h800";
  c.intraNodeBandwidth = 200e9;
  c.intraNodeEfficiency = 160.0 / 200.0;
  return c;
}

ClusterDescription hgxH20() {
  // H20 (third-party figures): 148 / 296 (FP8) TFLOP/s, 96 GB HBM3 (six 16 GiB stacks) at
  // 4.0 TB/s, NVLink 900 GB/s total; the FP32, TF32 and SM figures are the H100's scaled by the
  // tensor rate (assumed); 8 x 400 Gb/s assumed, as an H100 board.
  ClusterDescription c = dgxH100();
  c.preset = "hgx-h20";
  c.device = {44e12, 74e12, 148e12, 296e12, 0, 96 * 1024 * kMiB, 4.0e12, 78};
  return c;
}

ClusterDescription mi300x(const char* preset, double hbmGiB, double bandwidth) {
  // MI300X: 163.4 (FP32) / 653.7 (TF32) / 1,307 (BF16) / 2,615 (FP8) TFLOP/s dense, 304 CUs;
  // Infinity Fabric full mesh of 8: 7 links, 896 GB/s aggregate both ways, 448 GB/s each way.
  // Assumed (AMD publishes no RCCL bus bandwidth here): RCCL's rings reach 0.7 of the links,
  // the H100's GEMM fraction, and 8 x 400 Gb/s NICs a node.
  ClusterDescription c = dgxH100();
  c.preset = preset;
  c.device = {163.4e12, 653.7e12, 1307e12, 2615e12, 0, hbmGiB * 1024 * kMiB, bandwidth, 304};
  c.intraNodeBandwidth = 448e9;
  c.intraNodeEfficiency = 0.7;
  return c;
}

ClusterDescription ascend910c() {
  // Ascend 910C (two 910B-class dies; third-party figures): ~752 TFLOP/s FP16, 128 GB HBM at
  // 3.2 TB/s, 784 GB/s of scale-up a chip (392 each way); a CloudMatrix384 supernode is one
  // domain of 384 NPUs over servers of 8. FP32 a quarter of FP16 and 2 x 20 AI cores, as the 910B.
  ClusterDescription c = ascend910b();
  c.preset = "ascend-910c";
  c.device = {752e12 / 4, 0, 752e12, 0, 0, 128 * 1024 * kMiB, 3.2e12, 40};
  c.intraNodeBandwidth = 392e9;
  c.nvlinkDomain = 384;
  c.nicGbps = 400;
  return c;
}

}  // namespace

const std::vector<std::string>& clusterPresetNames() {
  static const std::vector<std::string> names = {"dgx-a100-80gb", "dgx-h100",    "h200-sxm",   "dgx-h800",    "hgx-h20",
                                                 "dgx-b200",      "gb200-nvl72", "dgx-b300",   "gb300-nvl72", "mi300x",
                                                 "mi325x",        "ascend-910b", "ascend-910c"};
  return names;
}

std::optional<ClusterDescription> clusterPreset(std::string_view name) {
  if (name == "dgx-a100-80gb") return dgxA100();
  if (name == "dgx-h100") return dgxH100();
  if (name == "h200-sxm") return h200();
  if (name == "ascend-910b") return ascend910b();
  if (name == "dgx-h800") return dgxH800();
  if (name == "hgx-h20") return hgxH20();
  if (name == "dgx-b200") return dgxB200();
  if (name == "gb200-nvl72") return gb200Nvl72();
  if (name == "dgx-b300") return dgxB300();
  if (name == "gb300-nvl72") return gb300Nvl72();
  if (name == "mi300x") return mi300x("mi300x", 192, 5.3e12);
  if (name == "mi325x") return mi300x("mi325x", 256, 6.0e12);
  if (name == "ascend-910c") return ascend910c();
  return std::nullopt;
}

}  // namespace irc
