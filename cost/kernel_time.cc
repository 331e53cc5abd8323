#include "cost/kernel_time.h"
#include "plan/device_precision.h"

#include <algorithm>
#include <cmath>

namespace irc {
double waveEfficiency(const KernelWork& w, const ClusterDescription& c) {
  // cuBLAS picks among output tile shapes the one that fills the device best (CUTLASS's
  // 128 x 128, 128 x 64, 64 x 128, 64 x 64): the best of them.
  static constexpr double kTiles[][2] = {{128, 128}, {128, 64}, {64, 128}, {64, 64}};
  double units = static_cast<double>(std::max<int64_t>(1, c.device.computeUnits));
  double best = 0;
  for (const auto& [tr, tc] : kTiles) {
    double tiles = w.batch * std::ceil(w.rows / tr) * std::ceil(w.columns / tc);
    double waves = std::ceil(tiles / units);
    // Partial tiles at the edges compute padding too.
    double useful = w.batch * w.rows * w.columns / (tiles * tr * tc);
    best = std::max(best, tiles / (waves * units) * useful);
  }
  return best;
}

double kernelSeconds(const KernelWork& w, const ClusterDescription& c, Precision precision) {
  return kernelSecondsAtPeak(w, c, matmulPeak(c, precision));
}

namespace {

// The roofline's two sides: the kernel's FLOPs at the achievable rate, its bytes at HBM's.
struct Roofline {
  double math = 0, memory = 0;
};

Roofline roofline(const KernelWork& w, const ClusterDescription& c, double productPeak) {
  return {w.matmul ? w.flops / (productPeak * c.gemmEfficiency * waveEfficiency(w, c)) : w.flops / std::max(1.0, c.vectorPeak()),
          w.bytes / (c.device.hbmBandwidth * c.memoryEfficiency)};
}

}  // namespace

double kernelSecondsAtPeak(const KernelWork& w, const ClusterDescription& c, double productPeak) {
  if (w.view) return 0;
  Roofline r = roofline(w, c, productPeak);
  return std::max(r.math, r.memory) + c.kernelLaunchSeconds;
}

bool memoryBound(const KernelWork& w, const ClusterDescription& c, Precision precision) {
  if (w.view) return false;
  Roofline r = roofline(w, c, matmulPeak(c, precision));
  return r.memory > r.math;
}

}  // namespace irc
