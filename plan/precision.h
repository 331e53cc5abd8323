#pragma once
// `parallel.precision`: what a step computes in, as one recipe (docs/cluster.md, "Precision
// recipes"). The 16-bit mixed modes compute and keep activations, weights and gradients in the
// 16-bit dtype with float32 master weights beside the optimizer's moments (Megatron-LM,
// DeepSpeed). The low-precision recipes are bf16_mixed whose linear layers' products — the
// forward, input-gradient and weight-gradient GEMMs — run in FP8 or FP4 on quantized copies of
// their operands, as each recipe's own documentation says: Transformer Engine's DelayedScaling
// and Float8CurrentScaling (torchao's tensorwise), DeepSeek-V3's blockwise FP8 (TE's
// Float8BlockScaling), Blackwell's MXFP8 and NVFP4 block formats (TE's MXFP8BlockScaling,
// NVFP4BlockScaling). Attention, norms, the embedding, the head and the router stay 16-bit.
// This file is the one place a recipe's formats are written; the cost and memory models read it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"

namespace irc {

enum class Precision { Fp32, Bf16Mixed, Fp16Mixed, Fp8Delayed, Fp8Tensorwise, Fp8Blockwise, Mxfp8, Nvfp4 };

// The format a recipe's linear-layer products run in, which picks the device's peak.
enum class ProductFormat { Wide, Fp8, Fp4 };

struct PrecisionRecipe {
  Precision precision = Precision::Fp32;
  std::string_view name;
  ProductFormat linear = ProductFormat::Wide;  // the linear layers' three GEMMs
  // A quantized element's bytes (FP8 1, FP4 a half) and its scales' bytes per element: one
  // float32 per tensor (0), per 1 x 128 tile (4/128) or 128 x 128 block, one E8M0 byte per 32
  // (MXFP8), one E4M3 byte per 16 (NVFP4).
  double elementBytes = 0;
  double activationScaleBytes = 0;  // activations and gradients
  double weightScaleBytes = 0;
  // Current scaling needs the tensor's amax before it can cast: one more read of the 16-bit
  // tensor (Float8CurrentScaling; NVFP4's per-tensor second-level scale). Delayed scaling takes
  // the scale from the amax history and records the amax inside the cast; block formats compute
  // each block's scale inside the cast.
  bool amaxPass = false;
  // NVFP4 applies a random Hadamard transform to the weight gradient's operands: one more
  // read and write of each, at 16 bits.
  bool hadamardPass = false;
  // The optimizer's moments in bytes an element (float32; DeepSeek-V3 keeps them in BF16).
  double momentBytes = 4;
  // The experts' dispatch AlltoAll moves the quantized tokens (DeepSeek-V3's FP8 dispatch; the
  // combine stays BF16).
  bool quantizedDispatch = false;
  // Block formats the tensor cores scale in hardware: Blackwell and later (the device's FP4
  // peak stands for the generation; docs/cluster.md).
  bool blackwellOnly = false;

  bool lowPrecision() const { return linear != ProductFormat::Wide; }
  // One quantized copy of `elements` activation or gradient elements, or of weight elements.
  double activationCopyBytes(double elements) const { return elements * (elementBytes + activationScaleBytes); }
  double weightCopyBytes(double elements) const { return elements * (elementBytes + weightScaleBytes); }
};

const PrecisionRecipe& recipeOf(Precision p);
std::string_view precisionName(Precision p);
std::optional<Precision> parsePrecision(std::string_view s);
const std::vector<std::string>& precisionNames();
// The dtype a floating tensor of `dtype` is computed and held in under `p` (16-bit in the mixed
// modes and the low-precision recipes, whose other tensors are BF16; other dtypes and fp32
// unchanged).
DType computeDType(DType dtype, Precision p);

}  // namespace irc
