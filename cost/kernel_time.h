#pragma once
// What a kernel reaches on a cluster's device (docs/cluster.md): a roofline of its FLOPs at the
// achievable rate and its bytes at the achievable HBM bandwidth, plus a launch cost. A matrix
// product runs at the sustained fraction of the dense tensor-core peak that large GEMMs reach,
// less what wave quantization wastes: its output tiles (128 x 128 down to 64 x 64) run in waves
// of one tile per compute unit, and a last partial wave leaves units idle (NVIDIA's "Matrix Multiplication
// Background" guide), so small and skinny products fall far below peak.
#include "ir/cluster.h"
#include "plan/precision.h"

namespace irc {

struct KernelWork {
  double flops = 0;
  double bytes = 0;     // operands read and results written, at their compute dtype
  bool matmul = false;  // a factor contracted between two operands
  // A matrix product's output rows, columns and independent products (attention's heads).
  double rows = 1, columns = 1, batch = 1;
  bool view = false;  // no kernel: the result is its operand's memory (a Reshape)
};

// Output tiles per wave over the tiles launched: 1 for a product filling every unit evenly.
double waveEfficiency(const KernelWork& work, const ClusterDescription& cluster);
double kernelSeconds(const KernelWork& work, const ClusterDescription& cluster, Precision precision);
// Whether its bytes take longer than its FLOPs (the roofline's memory side; false for a view).
bool memoryBound(const KernelWork& work, const ClusterDescription& cluster, Precision precision);
// The same with a product's peak given: a low-precision recipe's FP8 or FP4 rate.
double kernelSecondsAtPeak(const KernelWork& work, const ClusterDescription& cluster, double productPeak);

}  // namespace irc
