#pragma once
// A sharding-aware diff of two `.ir` dumps: nodes are matched by name, not by `%N` numbering
// (references are rewritten to the names they point at), so inserting one op does not make
// every later line differ. Changes are reported as what a reviewer asks about: an op's strategy,
// its layouts, communication inserted or removed, parameters' slices.
#include <string>
#include <vector>

namespace irc {

struct IrDiff {
  std::vector<std::string> lines;  // one per difference, in A's order then B's additions
  bool empty() const { return lines.empty(); }
};

IrDiff diffIrText(const std::string& a, const std::string& b);

}  // namespace irc
