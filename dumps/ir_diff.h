#pragma once
// A sharding-aware diff of two `.ir` dumps: nodes are matched by name, not by `%N` numbering
// (references are rewritten to the names they point at), so inserting one op does not make
// every later line differ. Changes are reported as what a reviewer asks about: an op's strategy,
// its layouts, communication inserted or removed, parameters' slices.
#include <map>
#include <string>
#include <vector>

namespace irc {

struct IrDiff {
  std::vector<std::string> lines;  // one per difference, in A's order then B's additions
  bool empty() const { return lines.empty(); }
};

IrDiff diffIrText(const std::string& a, const std::string& b);

// What a review asks first of a dump, read off its text: every node's strategy, the inserted
// ops by type, and the per-rank totals. Bytes follow the report's ring model and are exact on a
// `validate` dump (local shapes); on a global dump they are those of the global shapes.
struct DumpSummary {
  std::map<std::string, std::string> strategies;  // node name -> "((2, 1), (1, 4))"
  std::vector<std::string> strategyOrder;         // node names in print order
  std::map<std::string, int> insertedByType;
  double commBytesPerRank = 0;
  double gradBytesPerRank = 0;  // _MirrorOperator: the gradient AllReduce it stands for
  double paramBytesPerRank = 0;
  int insertedOps = 0;
};
DumpSummary summarizeDump(const std::string& text);
// "l1.out -> stage 1" for every Send of a dump (its op named `<value>.send.<stage>`), in order.
std::vector<std::string> sentTransfers(const std::string* text);

}  // namespace irc
