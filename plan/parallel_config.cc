#include "plan/parallel_config.h"

#include <map>

namespace irc {
namespace {

template <typename Enum, size_t N>
std::optional<Enum> lookup(std::string_view s, const std::pair<Enum, const char*> (&table)[N]) {
  for (const auto& [value, name] : table)
    if (s == name) return value;
  return std::nullopt;
}

template <typename Enum, size_t N>
std::string_view nameOf(Enum e, const std::pair<Enum, const char*> (&table)[N]) {
  for (const auto& [value, name] : table)
    if (value == e) return name;
  return table[0].second;
}

template <typename Enum, size_t N>
std::vector<std::string> namesOf(const std::pair<Enum, const char*> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& entry : table) out.emplace_back(entry.second);
  return out;
}

const std::pair<SearchMode, const char*> kSearchModes[] = {
    {SearchMode::ShardingPropagation, "sharding_propagation"},
    {SearchMode::FactorPropagation, "factor_propagation"},
    {SearchMode::DataParallel, "data_parallel"},
    {SearchMode::SemiAuto, "semi_auto"},
    {SearchMode::Auto, "auto"},
};
const std::pair<FactorStrategy, const char*> kFactorStrategies[] = {
    {FactorStrategy::Aggressive, "aggressive"},
    {FactorStrategy::Basic, "basic"},
    {FactorStrategy::BasicThenAggressive, "basic_then_aggressive"},
};
const std::pair<RedistributionMode, const char*> kRedistributionModes[] = {
    {RedistributionMode::MindSpore, "mindspore"},
    {RedistributionMode::Optimal, "optimal"},
};
const std::pair<Optimizer, const char*> kOptimizers[] = {
    {Optimizer::AdamW, "adamw"},
    {Optimizer::Adam, "adam"},
    {Optimizer::Sgd, "sgd"},
    {Optimizer::Momentum, "momentum"},
};
const std::pair<GradientBuffer, const char*> kGradientBuffers[] = {
    {GradientBuffer::Freed, "freed"},
    {GradientBuffer::Persistent, "persistent"},
};
const std::pair<OptimizerKernels, const char*> kOptimizerKernels[] = {
    {OptimizerKernels::ForLoop, "for_loop"},
    {OptimizerKernels::Foreach, "foreach"},
    {OptimizerKernels::Fused, "fused"},
};

}  // namespace

std::string_view searchModeName(SearchMode m) { return nameOf(m, kSearchModes); }
std::optional<SearchMode> parseSearchMode(std::string_view s) { return lookup(s, kSearchModes); }
const std::vector<std::string>& searchModeNames() {
  static const auto names = namesOf(kSearchModes);
  return names;
}
std::string_view factorStrategyName(FactorStrategy s) { return nameOf(s, kFactorStrategies); }
std::optional<FactorStrategy> parseFactorStrategy(std::string_view s) { return lookup(s, kFactorStrategies); }
const std::vector<std::string>& factorStrategyNames() {
  static const auto names = namesOf(kFactorStrategies);
  return names;
}
std::string_view redistributionModeName(RedistributionMode m) { return nameOf(m, kRedistributionModes); }
std::optional<RedistributionMode> parseRedistributionMode(std::string_view s) { return lookup(s, kRedistributionModes); }
const std::vector<std::string>& redistributionModeNames() {
  static const auto names = namesOf(kRedistributionModes);
  return names;
}

std::string_view optimizerName(Optimizer o) { return nameOf(o, kOptimizers); }
std::optional<Optimizer> parseOptimizer(std::string_view s) { return lookup(s, kOptimizers); }
const std::vector<std::string>& optimizerNames() {
  static const auto names = namesOf(kOptimizers);
  return names;
}

std::string_view gradientBufferName(GradientBuffer b) { return nameOf(b, kGradientBuffers); }
std::optional<GradientBuffer> parseGradientBuffer(std::string_view s) { return lookup(s, kGradientBuffers); }
const std::vector<std::string>& gradientBufferNames() {
  static const auto names = namesOf(kGradientBuffers);
  return names;
}
std::string_view optimizerKernelsName(OptimizerKernels k) { return nameOf(k, kOptimizerKernels); }
std::optional<OptimizerKernels> parseOptimizerKernels(std::string_view s) { return lookup(s, kOptimizerKernels); }
const std::vector<std::string>& optimizerKernelsNames() {
  static const auto names = namesOf(kOptimizerKernels);
  return names;
}

int optimizerStatesPerElement(Optimizer o) {
  switch (o) {
    case Optimizer::AdamW:
    case Optimizer::Adam: return 2;
    case Optimizer::Momentum: return 1;
    case Optimizer::Sgd: return 0;
  }
  return 0;
}

double optimizerStateBytesPerElement(Optimizer o, Precision p) { return recipeOf(p).momentBytes * optimizerStatesPerElement(o); }

double optimizerUpdateBytesPerElement(Optimizer o, Precision p) {
  double states = 2 * optimizerStateBytesPerElement(o, p);
  if (p == Precision::Fp32) return 4 + 8 + states;
  return 2 + 2 + 8 + states;
}

}  // namespace irc
