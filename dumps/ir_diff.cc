#include "dumps/ir_diff.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "frontends/mindspore/dump_values.h"
#include "frontends/mindspore/parallel_facts.h"
#include "ops/collective.h"
#include "ir/trim.h"

namespace irc {
namespace {

// One dumped node as the reader gives it, its op line with references rewritten to names.
struct Node {
  std::string body;  // "Op(args) {instance name: ...} primitive_attrs: {...}" with names for %N
  const DumpNode* read;
  const std::string& name() const { return read->name; }
};

struct Dump {
  DumpText text;                              // what the reader read (the nodes point into it)
  std::map<std::string, std::string> params;  // name -> rest of the line
  std::vector<std::string> paramOrder;
  std::vector<Node> nodes;
  std::string ret;
};

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// The end of the digits starting at `i` (i itself when there are none).
size_t digitsEnd(const std::string& s, size_t i) {
  while (i < s.size() && isDigit(s[i])) ++i;
  return i;
}

bool isNameChar(char c) {
  return isDigit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '.' || c == ':';
}

// Replaces `%N` by its node's name and `%paraK_NAME` by NAME, with the names known so far.
std::string renamed(const std::string& s, const std::map<std::string, std::string>& refNames) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    size_t pct = s.find('%', i);
    if (pct == std::string::npos) break;
    out.append(s, i, pct - i);
    size_t digits = digitsEnd(s, pct + 1);
    bool wordEnds = digits == s.size() || !(isNameChar(s[digits]) && s[digits] != '.' && s[digits] != ':');
    if (digits > pct + 1 && wordEnds) {
      std::string r = s.substr(pct, digits - pct);
      auto it = refNames.find(r);
      out += it != refNames.end() ? it->second : r;
      i = digits;
      continue;
    }
    if (s.compare(pct, 5, "%para") == 0) {
      size_t k = digitsEnd(s, pct + 5);
      if (k > pct + 5 && k < s.size() && s[k] == '_') {
        size_t e = k + 1;
        while (e < s.size() && isNameChar(s[e])) ++e;
        if (e > k + 1) {
          out.append(s, k + 1, e - k - 1);
          i = e;
          continue;
        }
      }
    }
    out += '%';
    i = pct + 1;
  }
  return out + s.substr(std::min(i, s.size()));
}

// The dump as the diff compares it: the one dump-text reader's nodes (frontends/mindspore/parallel_facts.h)
// with references rewritten to names, in text order (a subgraph's `%0` is its own).
Dump parse(const std::string& text) {
  Dump d;
  d.text = readDumpText(text);
  const DumpText& t = d.text;
  std::map<std::string, std::string> refNames;  // "%3" -> "matmul2"
  size_t p = 0;
  auto paramsBefore = [&](int line) {
    for (; p < t.params.size() && t.params[p].line < line; ++p) {
      const DumpParam& param = t.params[p];
      d.params[param.name] = param.rest;
      d.paramOrder.push_back(param.name);
      refNames[param.ref] = param.name;
    }
  };
  for (const DumpNode& n : t.nodes) {
    paramsBefore(n.line);
    if (n.type == "Return") {
      d.ret = renamed(n.rest, refNames);
      continue;
    }
    refNames[n.ref] = n.name;
    d.nodes.push_back(Node{renamed(n.rest, refNames), &n});
  }
  paramsBefore(std::numeric_limits<int>::max());
  return d;
}

}  // namespace

IrDiff diffIrText(const std::string& aText, const std::string& bText) {
  Dump a = parse(aText), b = parse(bText);
  IrDiff diff;
  auto& out = diff.lines;
  const auto &attrsA = a.text.headerAttrs, &attrsB = b.text.headerAttrs;
  if (attrsA != attrsB)
    for (size_t i = 0; i < std::max(attrsA.size(), attrsB.size()); ++i) {
      std::string x = i < attrsA.size() ? attrsA[i] : "", y = i < attrsB.size() ? attrsB[i] : "";
      if (x != y) out.push_back(fmt::format("attr: {} -> {}", x.empty() ? "(none)" : x, y.empty() ? "(none)" : y));
    }
  for (const auto& name : a.paramOrder) {
    if (!b.params.count(name)) out.push_back(fmt::format("- param {}: {}", name, a.params[name]));
    else if (b.params[name] != a.params[name])
      out.push_back(fmt::format("~ param {}: {} -> {}", name, a.params[name], b.params[name]));
  }
  for (const auto& name : b.paramOrder)
    if (!a.params.count(name)) out.push_back(fmt::format("+ param {}: {}", name, b.params[name]));

  std::map<std::string, const Node*> inB;
  for (const Node& n : b.nodes) inB[n.name()] = &n;
  std::map<std::string, bool> seen;
  for (const Node& n : a.nodes) {
    seen[n.name()] = true;
    if (!inB.count(n.name())) {
      out.push_back(fmt::format("- {} = {}", n.name(), n.body));
      continue;
    }
    const Node& o = *inB[n.name()];
    const DumpNode &x = *n.read, &y = *o.read;
    const std::string &sa = x.layoutStrategy, &sb = y.layoutStrategy;
    if (sa != sb)
      out.push_back(fmt::format("strategy {}: {} -> {}", n.name(), sa.empty() ? "none" : sa, sb.empty() ? "none" : sb));
    if (x.type != y.type) {
      // Another op under the same name (inserted ops are numbered per edge): the new one whole.
      out.push_back(fmt::format("~ {}: {} -> {}\n    now {}", n.name(), x.type, y.type, o.body));
      continue;
    }
    if (n.body != o.body) out.push_back(fmt::format("~ {}: {}\n    -> {}", n.name(), n.body, o.body));
    if (x.layoutAttrs != y.layoutAttrs && sa == sb)
      out.push_back(fmt::format("~ {} layouts: {}\n    -> {}", n.name(), x.layoutAttrs, y.layoutAttrs));
    if (x.types != y.types) out.push_back(fmt::format("~ {} types: {}\n    -> {}", n.name(), x.types, y.types));
    if (x.origin != y.origin && !x.origin.empty() && !y.origin.empty())
      out.push_back(fmt::format("~ {} origin: {}\n    -> {}", n.name(), x.origin, y.origin));
  }
  for (const Node& n : b.nodes)
    if (!seen.count(n.name()))
      out.push_back(fmt::format("+ {} = {}{}", n.name(), n.body, n.read->reason.empty() ? "" : "  # reason: " + n.read->reason));
  if (a.ret != b.ret) out.push_back(fmt::format("~ {} -> {}", a.ret, b.ret));
  return diff;
}

namespace {

// Bytes of one rank's tensor, 0 for what is no tensor.
double tensorBytes(const std::optional<TensorType>& t) {
  return t ? static_cast<double>(numElements(t->shape)) * static_cast<double>(byteSize(t->dtype)) : 0;
}

}  // namespace

DumpSummary summarizeDump(const std::string& text) {
  DumpSummary s;
  Dump d = parse(text);
  for (const DumpParam& p : d.text.params)
    if (p.hasDefault) s.paramBytesPerRank += tensorBytes(p.tensor);
  for (const Node& node : d.nodes) {
    const DumpNode& n = *node.read;
    if (!n.layoutStrategy.empty()) {
      s.strategies[n.name] = n.layoutStrategy;
      s.strategyOrder.push_back(n.name);
    }
    if (!n.inserted) continue;
    ++s.insertedByType[n.type];
    ++s.insertedOps;
    // What a collective moves: its first operand, over its group.
    double bytes = n.operandTensors.empty() ? 0 : tensorBytes(n.operandTensors[0]);
    double g = n.groupRanks.empty() ? 1 : static_cast<double>(n.groupRanks.size());
    std::optional<CollectiveKind> kind = collectiveOfType(n.type);
    if (kind && *kind != CollectiveKind::PointToPoint) s.commBytesPerRank += ringTraffic(*kind, g) * bytes;
    else if (const OpDef* def = findOpDef(n.type); def && def->family == OpFamily::Mirror)
      s.gradBytesPerRank += ringTraffic(CollectiveKind::AllReduce, g) * bytes;
  }
  return s;
}

std::vector<std::string> sentTransfers(const std::string* text) {
  std::vector<std::string> out;
  if (!text) return out;
  for (const DumpNode& n : readDumpText(*text).nodes) {
    if (collectiveOfType(n.type) != CollectiveKind::PointToPoint) continue;
    // A Send names the stage it sends to (`dest_rank`) and is named `<value>.send.<stage>`.
    auto stage = dumpInt(attrValueOf(n.attrs, "dest_rank"));
    if (!stage) continue;
    std::string suffix = fmt::format(".send.{}", *stage);
    if (n.name.size() <= suffix.size() || !n.name.ends_with(suffix)) continue;
    out.push_back(fmt::format("{} -> stage {}", std::string(n.name, 0, n.name.size() - suffix.size()), *stage));
  }
  return out;
}

}  // namespace irc
