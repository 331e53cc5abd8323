#pragma once
// The alpha-beta-gamma machine of `parallel.cost_model` (docs/search.md): the figures a plan
// without a cluster is timed with, and the bounds every spelling of them is checked against.
#include <string>

namespace irc {

// The machine a plan's time is estimated for (`parallel.cost_model`; docs/search.md). Defaults:
// alpha 10 us per message, beta 0.1 ns/byte (10 GB/s links), gamma 0.01 ns/byte (100 GB/s local
// copies); an op's compute runs at 100 TFLOP/s or 1 TB/s of memory traffic, the slower of the two.
struct CostModel {
  double alpha = 10e-6;
  double beta = 1e-10;
  double gamma = 1e-11;
  double peakFlops = 100e12;
  double memoryBandwidth = 1e12;
};

// What machines do, generously bounded (a figure outside is a unit mistake and prints absurd
// seconds): per cost_model key (alpha, beta, gamma, peak_flops, memory_bandwidth), the lowest and
// highest figure, for the YAML key and its command-line flag alike.
struct FigureBounds {
  double low, high;
};
FigureBounds costModelBounds(const std::string& key);

}  // namespace irc
