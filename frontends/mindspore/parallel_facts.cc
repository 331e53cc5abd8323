#include "frontends/mindspore/parallel_facts.h"

#include "frontends/mindspore/dump_values.h"
#include "ir/trim.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace irc {
namespace {

// The balanced group opening at `open` ('(' or '{'), or "" when unbalanced.
std::string balanced(const std::string& s, size_t open) {
  char o = s[open], c = o == '(' ? ')' : '}';
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    depth += (s[i] == o) - (s[i] == c);
    if (depth == 0) return s.substr(open, i - open + 1);
  }
  return "";
}

}  // namespace

namespace {
// The items of a bracketed list, split at its top-level commas; `opens`/`closes` are the
// brackets that nest (the list's own outer pair is dropped).
std::vector<std::string> splitTopLevelItems(const std::string& list, const std::string& opens, const std::string& closes) {
  std::vector<std::string> out;
  if (list.size() < 2) return out;
  std::string cur;
  int depth = 0;
  for (size_t i = 1; i + 1 < list.size(); ++i) {
    char ch = list[i];
    if (opens.find(ch) != std::string::npos) ++depth;
    if (closes.find(ch) != std::string::npos) --depth;
    if (ch == ',' && depth == 0) {
      out.push_back(std::string(trimmed(cur)));
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!trimmed(cur).empty()) out.push_back(std::string(trimmed(cur)));
  return out;
}
}  // namespace

std::string attrValueOf(const std::string& group, const std::string& key) {
  size_t p = group.find(key + ": ");
  while (p != std::string::npos && p > 0 && group[p - 1] != '{' && group[p - 1] != ' ') p = group.find(key + ": ", p + 1);
  if (p == std::string::npos) return "";
  size_t start = p + key.size() + 2, i = start;
  int depth = 0;
  for (; i < group.size(); ++i) {
    char ch = group[i];
    if (ch == '(' || ch == '[' || ch == '{') ++depth;
    if (ch == ')' || ch == ']' || ch == '}') {
      if (depth == 0) break;
      --depth;
    }
    if (ch == ',' && depth == 0) break;
  }
  return std::string(trimmed(group.substr(start, i - start)));
}

namespace {

// The strategy `{in_strategy: ((...))}` of a line (the last such brace group: 2.x prints it at
// the end of the node line, 1.x before the type line's colon).
std::string strategyTextOf(const std::string& line) {
  size_t p = line.rfind("{in_strategy: ");
  if (p == std::string::npos) return "";
  size_t open = p + 14;
  return open < line.size() && line[open] == '(' ? balanced(line, open) : "";
}

std::string outputShape(const std::string& typeLine) {
  size_t arrow = typeLine.find("-> (");
  if (arrow == std::string::npos) return "";
  size_t t = typeLine.find(", (", arrow);
  if (t == std::string::npos) return "";
  return balanced(typeLine, t + 2);
}

bool isSideNode(const std::string& type) {
  return type == "Load" || type == "UpdateState" || type == "Depend" || type == "MakeTuple" || type == "TupleGetItem" ||
         type == "Return" || type == "make_tuple" || type == "tuple_getitem";
}

bool isApart(const std::string& type) {
  return type == "_MirrorOperator" || type == "_VirtualDataset" || type == "_VirtualDiv" || type == "MirrorMicroStep" ||
         type == "_MirrorMiniStepOperator";
}

std::string stemOf(std::string name) {
  while (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back()))) name.pop_back();
  return name;
}

// `  %N(NAME) = Op(args) {instance name: X} primitive_attrs: {...} ...`
bool parseNode(const std::string& line, DumpNode& n) {
  if (line.rfind("  %", 0) != 0) return false;
  size_t eq = line.find(") = ");
  if (eq == std::string::npos) return false;
  size_t open = line.find('(');
  n.ref = line.substr(2, open - 2);
  n.name = line.substr(open + 1, eq - open - 1);
  n.rest = line.substr(eq + 4);
  size_t opStart = eq + 4, paren = line.find('(', opStart);
  if (paren == std::string::npos) return false;
  n.type = line.substr(opStart, paren - opStart);
  if (n.type.rfind("PrimFunc_", 0) == 0) n.type = n.type.substr(9);
  n.args = balanced(line, paren);
  size_t inst = line.find("{instance name: ");
  if (inst != std::string::npos) {
    size_t end = line.find('}', inst);
    n.instance = line.substr(inst + 16, end == std::string::npos ? std::string::npos : end - inst - 16);
  }
  size_t attrs = line.find("primitive_attrs: {");
  if (attrs != std::string::npos) n.attrs = balanced(line, attrs + 17);
  n.strategy = strategyTextOf(line);
  return true;
}

// The collective's details: its group's ranks and the attrs that decide what it moves.
std::string insertedDetails(const DumpNode& n) {
  std::vector<std::string> parts;
  if (std::string g = attrValueOf(n.attrs, "group_ranks"); !g.empty()) parts.push_back("group " + g);
  for (const char* key : {"op", "split_count", "split_dim", "concat_dim", "axis", "output_num", "rank_size"})
    if (std::string v = attrValueOf(n.attrs, key); !v.empty()) parts.push_back(fmt::format("{} {}", key, v));
  if (n.type == "StridedSlice") {
    // Operands: x, begin, end, strides.
    std::string inner = n.args.size() > 2 ? n.args.substr(1, n.args.size() - 2) : "";
    size_t first = inner.find(", ");
    if (first != std::string::npos) parts.push_back("slice " + inner.substr(first + 2));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string ParallelFact::text() const {
  std::string who = kind == Kind::ModelOp ? fmt::format("{}[{}]", type, stem) : type;
  std::string out = details.empty() ? who : fmt::format("{} {}", who, details);
  return shape.empty() ? out : fmt::format("{} -> {}", out, shape);
}

std::optional<std::string> dumpDefect(const DumpText& d, const std::string& text) {
  if (!d.entry.empty()) {
    // A line `}` after the last Return (MindSpore may append `# Order:` comments after it).
    size_t lastReturn = text.rfind("\n  Return(");
    bool closed = lastReturn != std::string::npos && text.find("\n}", lastReturn) != std::string::npos;
    if (!closed)
      return fmt::format("the dump of @{} ends without its graph's Return(...) and closing '}}': it was cut short", d.entry);
  }
  if (d.entry.empty() && d.params.empty() && d.nodes.empty())
    return std::string("not an .ir dump: no '# IR entry: @NAME' header, no '%para' parameter and no node line");
  return std::nullopt;
}

namespace {

// What a node's text means, read once: operands, the type line's layout attributes and types,
// a collective's group, whether the passes inserted it, its origin and reason comments.
void completeNode(DumpNode& n) {
  n.operands = splitArgs(n.args);
  for (const char* prefix : {"forward_op_", "redistribution_op_", "replace_op_", "mirror_op_"})
    n.inserted = n.inserted || n.instance.rfind(prefix, 0) == 0;
  if (std::string g = attrValueOf(n.attrs, "group_ranks"); !g.empty()) {
    std::istringstream ranks(g);
    std::string rank;
    while (std::getline(ranks, rank, '-'))
      if (auto r = dumpInt(rank)) n.groupRanks.push_back(*r);
  }
  if (size_t colon = n.typeLine.find("      : "); colon != std::string::npos) {
    n.layoutAttrs = std::string(trimmed(n.typeLine.substr(0, colon)));
    n.types = std::string(trimmed(n.typeLine.substr(colon + 8)));
    for (const char* key : {"in_strategy", "in_layout"})
      if (n.layoutStrategy.empty()) n.layoutStrategy = attrValueOf(n.layoutAttrs, key);
    if (std::string s = attrValueOf(n.layoutAttrs, "in_strategy"); !s.empty()) n.inStrategy = dumpStrategy(s);
    // Types are <...> groups: split at the commas outside them.
    size_t arrow = n.types.find(") -> (");
    if (!n.types.empty() && n.types[0] == '(') n.operandTypes = splitTopLevelItems(balanced(n.types, 0), "<", ">");
    if (arrow != std::string::npos) n.resultTypes = splitTopLevelItems(balanced(n.types, arrow + 5), "<", ">");
  }
  for (const std::string& t : n.operandTypes) n.operandTensors.push_back(dumpTensorType(t));
  for (const std::string& t : n.resultTypes) n.resultTensors.push_back(dumpTensorType(t));
  for (const std::string& c : n.comments) {
    if (n.origin.empty() && c.rfind("# strategy: ", 0) == 0) n.origin = c.substr(12);
    if (n.reason.empty() && c.rfind("# reason: ", 0) == 0) n.reason = c.substr(10);
  }
}

}  // namespace

std::optional<std::string> DumpText::headerAttr(std::string_view key) const {
  for (const std::string& a : headerAttrs)
    if (a.size() > key.size() + 1 && a.compare(0, key.size(), key) == 0 && a.compare(key.size(), 2, ": ") == 0)
      return a.substr(key.size() + 2);
  return std::nullopt;
}

DumpText readDumpText(const std::string& text) {
  DumpText d;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  bool inAttrs = false;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    DumpNode n;
    n.line = number;
    if (line.rfind("# IR entry: @", 0) == 0) {
      d.entry = line.substr(13);
      continue;
    }
    if (line == "# Attrs:") {
      inAttrs = true;
      continue;
    }
    if (inAttrs) {
      if (line.empty()) inAttrs = false;
      else d.headerAttrs.push_back(line);
      continue;
    }
    if (line.rfind("%para", 0) == 0 && line.find(": <") != std::string::npos) {
      size_t underscore = line.find('_'), colon = line.find(": <");
      if (underscore != std::string::npos && underscore < colon) {
        DumpParam p;
        p.line = number;
        p.name = line.substr(underscore + 1, colon - underscore - 1);
        p.ref = line.substr(0, colon);
        p.rest = line.substr(colon + 2);
        size_t typeEnd = line.find('>', colon);
        p.type = line.substr(colon + 2, typeEnd == std::string::npos ? std::string::npos : typeEnd - colon - 1);
        p.tensor = dumpTensorType(p.type);
        p.hasDefault = line.find(": has_default") != std::string::npos;
        d.params.push_back(p);
        continue;
      }
    }
    if (parseNode(line, n)) {
      d.nodes.push_back(n);
    } else if (line.rfind("  Return(", 0) == 0) {
      n.type = "Return";
      n.args = balanced(line, line.find('('));
      n.rest = trimmed(line);
      d.nodes.push_back(n);
    } else if (!d.nodes.empty() && line.rfind("      # ", 0) == 0) {
      d.nodes.back().comments.push_back(std::string(trimmed(line)));
    } else if (!d.nodes.empty() && d.nodes.back().typeLine.empty() && line.find("      : ") != std::string::npos) {
      d.nodes.back().typeLine = line;
      if (d.nodes.back().strategy.empty()) d.nodes.back().strategy = strategyTextOf(line);
    } else if (trimmed(line).rfind("#", 0) != 0 && !trimmed(line).empty()) {
      ++d.skippedLines;  // `...`, subgraph lines, prose: not what the readers need
    }
  }
  for (DumpNode& n : d.nodes) completeNode(n);
  return d;
}

std::vector<std::string> splitArgs(const std::string& p) { return splitTopLevelItems(p, "([{", ")]}"); }

ParallelFacts readParallelFacts(const std::string& text) {
  DumpText d = readDumpText(text);
  ParallelFacts result;
  result.skippedLines = d.skippedLines + d.params.size() + d.headerAttrs.size();
  for (const DumpNode& n : d.nodes) {
    if (isSideNode(n.type)) continue;
    ParallelFact f;
    f.type = n.type;
    f.shape = outputShape(n.typeLine);
    if (isApart(n.type)) {
      f.kind = ParallelFact::Kind::Apart;
      f.details = insertedDetails(n);
    } else if (n.inserted) {
      f.kind = ParallelFact::Kind::Inserted;
      f.details = insertedDetails(n);
    } else {
      f.stem = stemOf(n.instance);
      f.details = n.strategy;
    }
    result.facts.push_back(f);
  }
  return result;
}

std::vector<std::string> diffParallelFacts(const ParallelFacts& a, const ParallelFacts& b) {
  // Align by identity (kind, type, stem) with a longest common subsequence, then compare what
  // aligned facts carry.
  auto identity = [](const ParallelFact& f) { return fmt::format("{}|{}|{}", static_cast<int>(f.kind), f.type, f.stem); };
  const auto &x = a.facts, &y = b.facts;
  std::vector<std::vector<int>> lcs(x.size() + 1, std::vector<int>(y.size() + 1, 0));
  for (size_t i = x.size(); i-- > 0;)
    for (size_t j = y.size(); j-- > 0;)
      lcs[i][j] = identity(x[i]) == identity(y[j]) ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<std::string> out;
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    if (i < x.size() && j < y.size() && identity(x[i]) == identity(y[j])) {
      if (x[i].details != y[j].details || x[i].shape != y[j].shape)
        out.push_back(fmt::format("~ {}\n    -> {}", x[i].text(), y[j].text()));
      ++i, ++j;
    } else if (j < y.size() && (i == x.size() || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out.push_back("+ " + y[j++].text());
    } else {
      out.push_back("- " + x[i++].text());
    }
  }
  return out;
}

}  // namespace irc
