#pragma once
// What a device runs each precision recipe at (plan/precision.h): the peak of its products, the
// recipes its tensor cores support, and what `precision: auto` chooses among. The device's
// figures are ir/cluster.h's; the recipes are plan/'s.
#include <optional>
#include <string>
#include <vector>

#include "ir/cluster.h"
#include "plan/precision.h"

namespace irc {

// Peak FLOP/s of a matrix product in `p` (tensor cores: bf16/fp16 in the mixed modes and
// around the low-precision recipes' linear layers, fp32 otherwise), and of a product in a given
// format (FP8, FP4: the recipe's linear layers; 0 where the device has no such unit). Other
// arithmetic runs at ClusterDescription::vectorPeak.
double matmulPeak(const ClusterDescription& c, Precision p);
double productPeak(const ClusterDescription& c, ProductFormat f, Precision p);
// The precisions the device runs: a low-precision recipe needs its format's tensor cores
// (FP8; the block formats Blackwell's, which the FP4 peak stands for). Why `p` is not among
// them, or nullopt.
std::vector<std::string> supportedPrecisions(const ClusterDescription& c);
std::optional<std::string> whyUnsupported(const ClusterDescription& c, Precision p);
// What `precision: auto` chooses among: BF16 mixed precision, and where the device has FP8
// tensor cores the FP8 recipe its vendor's training framework runs by default (Blackwell:
// MXFP8; Hopper and Ada: per-tensor current scaling). Not FP16 (BF16's speed with loss scaling)
// nor NVFP4 (its numerics are a choice a user makes, not a speed-up to take silently).
std::vector<Precision> autoPrecisionCandidates(const ClusterDescription& c);

}  // namespace irc
