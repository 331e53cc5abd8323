#include "plan/precision.h"

namespace irc {
namespace {

PrecisionRecipe wide(Precision p, std::string_view name) {
  PrecisionRecipe r;
  r.precision = p;
  r.name = name;
  return r;
}

// Each recipe as its documentation states it (docs/cluster.md, "Precision recipes", names the
// sources): Transformer Engine's common.recipe classes, torchao's float8 training, DeepSeek-V3's
// technical report (§3.3), the OCP Microscaling spec and NVIDIA's NVFP4 training recipe.
PrecisionRecipe lowPrecision(Precision p, std::string_view name) {
  PrecisionRecipe r = wide(p, name);
  r.linear = ProductFormat::Fp8;
  r.elementBytes = 1;
  switch (p) {
    case Precision::Fp8Delayed: break;  // one float32 scale a tensor, from the amax history
    case Precision::Fp8Tensorwise: r.amaxPass = true; break;
    case Precision::Fp8Blockwise:
      r.activationScaleBytes = 4.0 / 128;          // 1 x 128 tiles, a float32 scale each
      r.weightScaleBytes = 4.0 / (128.0 * 128.0);  // 128 x 128 blocks
      r.momentBytes = 2;                           // BF16 moments
      r.quantizedDispatch = true;
      break;
    case Precision::Mxfp8:
      r.activationScaleBytes = r.weightScaleBytes = 1.0 / 32;  // an E8M0 scale per 32 elements
      r.blackwellOnly = true;
      break;
    case Precision::Nvfp4:
      r.linear = ProductFormat::Fp4;
      r.elementBytes = 0.5;
      r.activationScaleBytes = 1.0 / 16;  // an E4M3 scale per 16 elements (1 x 16)
      r.weightScaleBytes = 1.0 / 256;     // weights in 16 x 16 blocks
      r.amaxPass = true;                  // the per-tensor float32 scale above the block scales
      r.hadamardPass = true;
      r.blackwellOnly = true;
      break;
    default: break;
  }
  return r;
}

const PrecisionRecipe kRecipes[] = {
    wide(Precision::Fp32, "fp32"),
    wide(Precision::Bf16Mixed, "bf16_mixed"),
    wide(Precision::Fp16Mixed, "fp16_mixed"),
    lowPrecision(Precision::Fp8Delayed, "fp8_delayed"),
    lowPrecision(Precision::Fp8Tensorwise, "fp8_tensorwise"),
    lowPrecision(Precision::Fp8Blockwise, "fp8_blockwise"),
    lowPrecision(Precision::Mxfp8, "mxfp8"),
    lowPrecision(Precision::Nvfp4, "nvfp4"),
};

}  // namespace

const PrecisionRecipe& recipeOf(Precision p) {
  for (const PrecisionRecipe& r : kRecipes)
    if (r.precision == p) return r;
  return kRecipes[0];
}

std::string_view precisionName(Precision p) { return recipeOf(p).name; }

std::optional<Precision> parsePrecision(std::string_view s) {
  for (const PrecisionRecipe& r : kRecipes)
    if (s == r.name) return r.precision;
  return std::nullopt;
}

const std::vector<std::string>& precisionNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PrecisionRecipe& r : kRecipes) out.emplace_back(r.name);
    return out;
  }();
  return names;
}

DType computeDType(DType dtype, Precision p) {
  if (dtype != DType::Float32) return dtype;
  switch (p) {
    case Precision::Fp32: return dtype;
    case Precision::Fp16Mixed: return DType::Float16;
    default: return DType::BFloat16;  // bf16_mixed and the low-precision recipes around their products
  }
}

}  // namespace irc
