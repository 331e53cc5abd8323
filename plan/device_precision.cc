#include "plan/device_precision.h"

#include <algorithm>

#include <fmt/format.h>

namespace irc {

double matmulPeak(const ClusterDescription& c, Precision p) {
  if (p != Precision::Fp32 && c.device.bf16Flops > 0) return c.device.bf16Flops;
  return c.device.fp32Flops > 0 ? c.device.fp32Flops : c.device.bf16Flops;
}

double productPeak(const ClusterDescription& c, ProductFormat f, Precision p) {
  switch (f) {
    case ProductFormat::Fp8: return c.device.fp8Flops;
    case ProductFormat::Fp4: return c.device.fp4Flops;
    case ProductFormat::Wide: break;
  }
  return matmulPeak(c, p);
}

std::optional<std::string> whyUnsupported(const ClusterDescription& c, Precision p) {
  const PrecisionRecipe& r = recipeOf(p);
  std::string who = c.preset.empty() ? "the cluster's device" : c.preset + "'s device";
  if (r.blackwellOnly && c.device.fp4Flops <= 0)
    return fmt::format("precision {} scales its blocks in Blackwell's tensor cores; {} has none (no peak_flops.fp4)", r.name,
                       who);
  if (r.linear == ProductFormat::Fp8 && c.device.fp8Flops <= 0)
    return fmt::format("precision {} runs the linear layers on FP8 tensor cores; {} has none (no peak_flops.fp8)", r.name, who);
  if (r.linear == ProductFormat::Fp4 && c.device.fp4Flops <= 0)
    return fmt::format("precision {} runs the linear layers on FP4 tensor cores; {} has none (no peak_flops.fp4)", r.name, who);
  return std::nullopt;
}

std::vector<Precision> autoPrecisionCandidates(const ClusterDescription& c) {
  std::vector<Precision> out{Precision::Bf16Mixed};
  if (c.device.fp8Flops > 0) out.push_back(c.device.fp4Flops > 0 ? Precision::Mxfp8 : Precision::Fp8Tensorwise);
  std::erase_if(out, [&](Precision p) { return whyUnsupported(c, p).has_value(); });
  return out;
}

std::vector<std::string> supportedPrecisions(const ClusterDescription& c) {
  std::vector<std::string> out;
  for (const std::string& name : precisionNames())
    if (!whyUnsupported(c, *parsePrecision(name))) out.push_back(name);
  return out;
}

}  // namespace irc
