#include "dumps/ir_diff.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "frontends/mindspore/parallel_facts.h"
#include "ops/collective.h"
#include "ir/trim.h"

namespace irc {
namespace {

// One dumped node: its op line (references by name), type line and comment lines.
struct Node {
  std::string name;
  std::string body;      // "Op(args) {instance name: ...} primitive_attrs: {...}" with names for %N
  std::string strategy;  // the {in_strategy: ...} or {in_layout: ...} part of the type line, if any
  std::string types;     // the types after the colon
  std::vector<std::string> comments;
};

struct Dump {
  std::vector<std::string> headerAttrs;       // "device_num: 8"
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
  DumpText t = readDumpText(text);
  Dump d;
  d.headerAttrs = t.headerAttrs;
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
    Node node{n.name, renamed(n.rest, refNames), "", "", n.comments};
    if (size_t colon = n.typeLine.find("      : "); colon != std::string::npos) {
      node.strategy = std::string(trimmed(n.typeLine.substr(0, colon)));
      node.types = std::string(trimmed(n.typeLine.substr(colon + 8)));
    }
    d.nodes.push_back(std::move(node));
  }
  paramsBefore(std::numeric_limits<int>::max());
  return d;
}

std::string strategyPart(const std::string& s) {
  // "{in_strategy: ((2, 4), (4)), device_matrix: ...}" -> "((2, 4), (4))"
  for (const char* key : {"in_strategy: ", "in_layout: "}) {
    size_t p = s.find(key);
    if (p == std::string::npos) continue;
    p += std::string(key).size();
    int depth = 0;
    size_t e = p;
    for (; e < s.size(); ++e) {
      depth += (s[e] == '(') - (s[e] == ')');
      if (depth == 0) break;
    }
    return s.substr(p, e - p + 1);
  }
  return "";
}

std::string opOf(const std::string& body) { return body.substr(0, body.find('(')); }

}  // namespace

IrDiff diffIrText(const std::string& aText, const std::string& bText) {
  Dump a = parse(aText), b = parse(bText);
  IrDiff diff;
  auto& out = diff.lines;
  if (a.headerAttrs != b.headerAttrs)
    for (size_t i = 0; i < std::max(a.headerAttrs.size(), b.headerAttrs.size()); ++i) {
      std::string x = i < a.headerAttrs.size() ? a.headerAttrs[i] : "", y = i < b.headerAttrs.size() ? b.headerAttrs[i] : "";
      if (x != y) out.push_back(fmt::format("attr: {} -> {}", x.empty() ? "(none)" : x, y.empty() ? "(none)" : y));
    }
  for (const auto& name : a.paramOrder) {
    auto it = b.params.find(name);
    if (it == b.params.end()) out.push_back(fmt::format("- param {}: {}", name, a.params[name]));
    else if (it->second != a.params[name]) out.push_back(fmt::format("~ param {}: {} -> {}", name, a.params[name], it->second));
  }
  for (const auto& name : b.paramOrder)
    if (!a.params.count(name)) out.push_back(fmt::format("+ param {}: {}", name, b.params[name]));

  std::map<std::string, const Node*> inB;
  for (const Node& n : b.nodes) inB[n.name] = &n;
  std::map<std::string, bool> seen;
  for (const Node& n : a.nodes) {
    seen[n.name] = true;
    auto it = inB.find(n.name);
    if (it == inB.end()) {
      out.push_back(fmt::format("- {} = {}", n.name, n.body));
      continue;
    }
    const Node& o = *it->second;
    std::string sa = strategyPart(n.strategy), sb = strategyPart(o.strategy);
    if (sa != sb) out.push_back(fmt::format("strategy {}: {} -> {}", n.name, sa.empty() ? "none" : sa, sb.empty() ? "none" : sb));
    if (opOf(n.body) != opOf(o.body)) {
      // Another op under the same name (inserted ops are numbered per edge): the new one whole.
      out.push_back(fmt::format("~ {}: {} -> {}\n    now {}", n.name, opOf(n.body), opOf(o.body), o.body));
      continue;
    }
    if (n.body != o.body) out.push_back(fmt::format("~ {}: {}\n    -> {}", n.name, n.body, o.body));
    if (n.strategy != o.strategy && sa == sb)
      out.push_back(fmt::format("~ {} layouts: {}\n    -> {}", n.name, n.strategy, o.strategy));
    if (n.types != o.types) out.push_back(fmt::format("~ {} types: {}\n    -> {}", n.name, n.types, o.types));
    std::vector<std::string> ca, cb;
    for (const auto& c : n.comments)
      if (c.rfind("# strategy:", 0) == 0) ca.push_back(c);
    for (const auto& c : o.comments)
      if (c.rfind("# strategy:", 0) == 0) cb.push_back(c);
    if (ca != cb && !ca.empty() && !cb.empty())
      out.push_back(fmt::format("~ {} origin: {}\n    -> {}", n.name, ca[0].substr(12), cb[0].substr(12)));
  }
  for (const Node& n : b.nodes)
    if (!seen.count(n.name)) {
      std::string reason;
      for (const auto& c : n.comments)
        if (c.rfind("# reason:", 0) == 0) reason = "  " + c;
      out.push_back(fmt::format("+ {} = {}{}", n.name, n.body, reason));
    }
  if (a.ret != b.ret) out.push_back(fmt::format("~ {} -> {}", a.ret, b.ret));
  return diff;
}

namespace {

// Bytes of one element of a printed dtype (`Float32`).
int dtypeBytes(std::string_view name) {
  if (name == "Float64" || name == "Int64") return 8;
  if (name == "Float16" || name == "BFloat16") return 2;
  if (name == "Int8" || name == "UInt8" || name == "Bool") return 1;
  return 4;
}

// Bytes of the first tensor type in `types` (`<Tensor[Float32], (32, 64)>...`), 0 if none.
double firstTensorBytes(const std::string& types) {
  size_t t = types.find("<Tensor[");
  if (t == std::string::npos) return 0;
  size_t close = types.find(']', t);
  size_t open = types.find('(', close), end = types.find(')', open);
  if (close == std::string::npos || open == std::string::npos || end == std::string::npos) return 0;
  double elements = 1;
  std::string dims = types.substr(open + 1, end - open - 1);
  size_t start = 0;
  while (start < dims.size()) {
    size_t comma = dims.find(',', start);
    std::string d = std::string(trimmed(dims.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos) elements *= std::stod(d);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return elements * dtypeBytes(std::string_view(types).substr(t + 8, close - t - 8));
}

// The size of the group an inserted collective's body names (`group_ranks: 0-1-2-3`).
double groupSize(const std::string& body) {
  size_t p = body.find("group_ranks: ");
  if (p == std::string::npos) return 1;
  size_t end = body.find_first_of(",}", p);
  std::string ranks = body.substr(p + 13, end - p - 13);
  return 1 + static_cast<double>(std::count(ranks.begin(), ranks.end(), '-'));
}

bool isInsertedInstance(const std::string& body) {
  for (const char* prefix : {"{instance name: forward_op_", "{instance name: redistribution_op_", "{instance name: replace_op_",
                             "{instance name: mirror_op_"})
    if (body.find(prefix) != std::string::npos) return true;
  return false;
}

}  // namespace

DumpSummary summarizeDump(const std::string& text) {
  DumpSummary s;
  Dump d = parse(text);
  for (const auto& [name, rest] : d.params)
    if (rest.find(": has_default") != std::string::npos) s.paramBytesPerRank += firstTensorBytes(rest);
  for (const Node& n : d.nodes) {
    std::string strategy = strategyPart(n.strategy);
    if (!strategy.empty()) {
      s.strategies[n.name] = strategy;
      s.strategyOrder.push_back(n.name);
    }
    if (!isInsertedInstance(n.body)) continue;
    std::string op = opOf(n.body);
    ++s.insertedByType[op];
    ++s.insertedOps;
    double bytes = firstTensorBytes(n.types), g = groupSize(n.body);
    std::optional<CollectiveKind> kind = collectiveOfType(op);
    if (kind && *kind != CollectiveKind::PointToPoint) s.commBytesPerRank += ringTraffic(*kind, g) * bytes;
    else if (const OpDef* def = findOpDef(op); def && def->family == OpFamily::Mirror)
      s.gradBytesPerRank += ringTraffic(CollectiveKind::AllReduce, g) * bytes;
  }
  return s;
}

std::vector<std::string> sentTransfers(const std::string* text) {
  std::vector<std::string> out;
  if (!text) return out;
  for (const DumpNode& n : readDumpText(*text).nodes) {
    if (collectiveOfType(n.type) != CollectiveKind::PointToPoint) continue;
    // A Send's name ends in `.send.<stage>`, the stage it sends to.
    std::string_view name = n.name;
    size_t marker = name.rfind(".send.");
    if (marker == std::string_view::npos || marker == 0) continue;
    std::string_view stage = name.substr(marker + 6);
    if (stage.empty() || stage.find_first_not_of("0123456789") != std::string_view::npos) continue;
    out.push_back(fmt::format("{} -> stage {}", name.substr(0, marker), stage));
  }
  return out;
}

}  // namespace irc
