#include "ir/cost_model.h"

#include <map>

namespace irc {

FigureBounds costModelBounds(const std::string& key) {
  // Seconds per message, seconds per byte sent and copied, FLOP/s, bytes/s.
  static const std::map<std::string, FigureBounds> bounds = {{"alpha", {1e-9, 1}},
                                                             {"beta", {1e-15, 1e-3}},
                                                             {"gamma", {1e-15, 1e-3}},
                                                             {"peak_flops", {1e9, 1e18}},
                                                             {"memory_bandwidth", {1e6, 1e15}}};
  return bounds.at(key);
}

}  // namespace irc
