#include "ir/redist_step.h"

#include <algorithm>

namespace irc {

int64_t RedistStep::groupSize() const {
  int64_t n = 1;
  for (int a : axes) n *= mesh.dims[a];
  return n;
}

std::vector<int64_t> stepGroup(const RedistStep& step, int64_t rank) { return groupAlongAxes(step.mesh, rank, step.axes); }

std::pair<IntTuple, IntTuple> splitBounds(const RedistStep& step, int64_t rank) {
  IntTuple begin(step.localBefore.size(), 0), end(step.localBefore.begin(), step.localBefore.end());
  std::vector<int64_t> group = stepGroup(step, rank);
  int64_t index = std::find(group.begin(), group.end(), rank) - group.begin();
  int64_t slice = step.localAfter[step.dim];
  begin[step.dim] = index * slice;
  end[step.dim] = begin[step.dim] + slice;
  return {begin, end};
}

}  // namespace irc
