#include "passes/manager/compile_options.h"

namespace irc {

std::vector<int64_t> CompileOptions::everyRank() const {
  std::vector<int64_t> all;
  for (int64_t r = 0; r < rankCount(); ++r) all.push_back(r);
  return all;
}

CompileOptions optionsFromModel(const ParallelConfig& model) {
  CompileOptions o;
  static_cast<ParallelSettings&>(o) = model;
  o.settingsLoc = model.loc;
  return o;
}

}  // namespace irc
