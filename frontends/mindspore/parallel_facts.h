#pragma once
// What parallelism decided, read off a dump's text -- irc's or MindSpore's own (1.x: the
// strategy on the type line; 2.x: the strategy braces at the end of the node line, `PrimFunc_`
// prefixes, `# scope:` / `# In file` comments, Load / UpdateState / Depend side nodes). Nodes
// are not matched by debug name (`equivx`, `CNode_310$a` mean nothing) but by op type and
// instance-name stem, in print order; `irc diff --parallel` compares two such lists.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/sharding.h"

namespace irc {

// One node of a dump as the text gives it (both MindSpore layouts), for the readers: the text
// as printed (for messages and diffs) and, read once here, what it means.
struct DumpNode {
  int line = 0;                       // 1-based line of the node in the text
  std::string ref;                    // %3
  std::string name;                   // the debug name in `%3(NAME)`
  std::string rest;                   // what follows `%3(NAME) = ` (Return: the whole trimmed line)
  std::string type;                   // MatMul (PrimFunc_ dropped)
  std::string args;                   // "(%1, %2, (0, 0))" as printed
  std::vector<std::string> operands;  // args' top-level items: "%1", "%2", "(0, 0)"
  std::string instance;               // the instance name, if any
  bool inserted = false;  // an op the parallel passes inserted (forward_op_, redistribution_op_, replace_op_, mirror_op_)
  std::string attrs;      // "{...}" of primitive_attrs, if any
  std::vector<int64_t> groupRanks;          // a collective's `group_ranks: 0-1-2-3`
  std::string strategy;                     // "((2, 1), (1, 4))" from the node or type line, if any
  std::string typeLine;                     // "      : (...) -> (...)"
  std::string layoutAttrs;                  // the type line's `{in_strategy: ..., device_matrix: ...}` before its colon, if any
  std::string layoutStrategy;               // its in_strategy or in_layout value
  std::optional<ShardStrategy> inStrategy;  // its in_strategy, read (an in_layout names axes: none)
  std::string types;                        // the type line after its colon: "(<...>, <...>) -> (<...>)"
  std::vector<std::string> operandTypes, resultTypes;     // the `<...>` items on each side
  std::vector<std::optional<TensorType>> operandTensors;  // those that are tensors, typed
  std::vector<std::optional<TensorType>> resultTensors;
  std::vector<std::string> comments;  // the `# ...` lines under the node, trimmed
  std::string origin;                 // the `# strategy: ...` comment's text after the prefix
  std::string reason;                 // the `# reason: ...` comment's text after the prefix
};
// A `%paraK_NAME: TYPE [: has_default]` line.
struct DumpParam {
  int line = 0;
  std::string ref;   // %para2_NAME
  std::string rest;  // what follows `NAME: `
  std::string name, type;
  std::optional<TensorType> tensor;  // the type, read
  bool hasDefault = false;
};
struct DumpText {
  std::string entry;  // `# IR entry: @NAME`
  std::vector<std::string> headerAttrs;
  std::vector<DumpParam> params;
  std::vector<DumpNode> nodes;  // Return included (type "Return")
  size_t skippedLines = 0;
  // The value of a `# Attrs:` line `KEY: VALUE`, nullopt when none names `key`.
  std::optional<std::string> headerAttr(std::string_view key) const;
};
DumpText readDumpText(const std::string& text);
// Why `text` (read as `d`) is no dump a reader can trust, nullopt when it is one: a file that
// begins as a whole dump does (`# IR entry: @NAME`) ends its graph with Return and the closing
// `}` (one cut short does not); a headless excerpt, as the seed documents quote one, holds a
// parameter or a node at least.
std::optional<std::string> dumpDefect(const DumpText& d, const std::string& text);
// Splits "(a, (b, c), d)" into its top-level items.
std::vector<std::string> splitArgs(const std::string& parenthesised);
// The value of `key: ` in a "{...}" attribute group, "" when absent.
std::string attrValueOf(const std::string& group, const std::string& key);

struct ParallelFact {
  enum class Kind { ModelOp, Inserted, Apart };  // Apart: mirrors, _VirtualDataset, _VirtualDiv
  Kind kind = Kind::ModelOp;
  std::string type;          // MatMul (PrimFunc_ dropped)
  std::string stem;          // instance name without trailing digits; inserted ops: empty
  std::string details;       // strategy / group and the attrs that matter / slice bounds
  std::string shape;         // the (first) output's shape as printed, e.g. (32, 16)
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
