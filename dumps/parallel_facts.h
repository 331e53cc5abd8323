#pragma once
// What parallelism decided, read off a dump's text -- irc's or MindSpore's own (1.x: the
// strategy on the type line; 2.x: the strategy braces at the end of the node line, `PrimFunc_`
// prefixes, `# scope:` / `# In file` comments, Load / UpdateState / Depend side nodes). Nodes
// are not matched by debug name (`equivx`, `CNode_310$a` mean nothing) but by op type and
// instance-name stem, in print order; `irc diff --parallel` compares two such lists.
#include <string>
#include <vector>

namespace irc {

struct ParallelFact {
  enum class Kind { ModelOp, Inserted, Apart };  // Apart: mirrors, _VirtualDataset, _VirtualDiv
  Kind kind = Kind::ModelOp;
  std::string type;     // MatMul (PrimFunc_ dropped)
  std::string stem;     // instance name without trailing digits; inserted ops: empty
  std::string details;  // strategy / group and the attrs that matter / slice bounds
  std::string shape;    // the (first) output's shape as printed, e.g. (32, 16)
  std::string text() const;  // one line for a diff
};

struct ParallelFacts {
  std::vector<ParallelFact> facts;
  size_t skippedLines = 0;  // lines the reader did not recognise (headers, `...`, prose)
};

ParallelFacts readParallelFacts(const std::string& dumpText);

// Differences between two fact lists: "- fact" / "+ fact" / "~ model op: what changed".
std::vector<std::string> diffParallelFacts(const ParallelFacts& a, const ParallelFacts& b);

}  // namespace irc
