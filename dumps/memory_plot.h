#pragma once
// `irc memory --plot`: live bytes over the op sequence as an SVG, one line per program (the
// forward pass; the training step's forward then backward), each labelled at its end, its peak
// marked and named.
#include <string>

#include "cost/memory_estimate.h"

namespace irc {

std::string memoryPlotSvg(const MemoryEstimate& memory, const std::string& title);

}  // namespace irc
