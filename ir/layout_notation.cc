#include "ir/layout_notation.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/suggest.h"
#include "ir/trim.h"

namespace irc {
namespace {

std::optional<int64_t> parseInt(std::string_view s) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// "S(0)" with prefix "S" -> "0"; nullopt when the entry is not of that form.
std::optional<std::string> callArgument(std::string_view entry, std::string_view name) {
  if (entry.size() < name.size() + 2 || entry.substr(0, name.size()) != name || entry[name.size()] != '(' || entry.back() != ')')
    return std::nullopt;
  return std::string(trimmed(entry.substr(name.size() + 1, entry.size() - name.size() - 2)));
}

std::string meshAxisList(const DeviceMatrix& mesh) { return joinNames(mesh.names); }

// Several mesh axes splitting one dim nest in mesh-axis order (first axis major).
NotationResult<AxisAssignment> assignPerMeshAxis(const std::vector<std::string>& entries, const DeviceMatrix& mesh,
                                                 size_t tensorRank, const char* notation, const char* splitName,
                                                 const std::vector<const char*>& replicateNames, const char* partialName,
                                                 const char* expected) {
  if (entries.size() != static_cast<size_t>(mesh.rank()))
    return NotationError{-1, fmt::format("{} has {} entries; it needs one per device-matrix axis ({}: {})", notation,
                                         entries.size(), mesh.rank(), meshAxisList(mesh))};
  AxisAssignment out;
  out.dims.assign(tensorRank, {});
  std::optional<ReduceOp> partialOp;
  for (size_t axis = 0; axis < entries.size(); ++axis) {
    const std::string e = std::string(trimmed(entries[axis]));
    int entry = static_cast<int>(axis);
    if (std::find(replicateNames.begin(), replicateNames.end(), e) != replicateNames.end()) continue;
    if (auto arg = callArgument(e, splitName)) {
      auto dim = parseInt(*arg);
      if (!dim || *dim < 0 || static_cast<size_t>(*dim) >= tensorRank)
        return NotationError{entry, fmt::format("'{}' names tensor dim {}; the tensor has rank {} (valid: 0 .. {})", e, *arg,
                                                tensorRank, static_cast<int64_t>(tensorRank) - 1)};
      out.dims[*dim].push_back(static_cast<int>(axis));
      continue;
    }
    std::optional<std::string> partialArg;
    if (e == partialName) partialArg = "";
    else partialArg = callArgument(e, partialName);
    if (partialArg) {
      ReduceOp op = ReduceOp::Sum;
      if (!partialArg->empty()) {
        auto parsed = parseReduceOp(*partialArg);
        if (!parsed)
          return NotationError{entry, fmt::format("'{}' has reduce op '{}'; valid: sum, max, min, prod", e, *partialArg)};
        op = *parsed;
      }
      if (partialOp && *partialOp != op)
        return NotationError{entry, "all partial axes of one tensor must use the same reduce op"};
      partialOp = op;
      out.partialAxes.push_back(static_cast<int>(axis));
      continue;
    }
    return NotationError{entry, fmt::format("'{}' is not a {} entry; expected {}", e, notation, expected)};
  }
  out.partialOp = partialOp.value_or(ReduceOp::Sum);
  return out;
}

std::string partialSuffix(const TensorLayout& l) {
  return l.partialOp == ReduceOp::Sum ? "" : fmt::format("({})", reduceOpName(l.partialOp));
}

// Per mesh axis: the tensor dim it splits (-1 none), or nullopt if several axes split one dim
// against mesh order (not expressible per mesh axis).
std::optional<std::vector<int>> dimPerMeshAxis(const TensorLayout& l) {
  std::vector<int> dimOf(l.mesh.rank(), -1);
  for (size_t d = 0; d < l.dims.size(); ++d) {
    if (!std::is_sorted(l.dims[d].begin(), l.dims[d].end())) return std::nullopt;
    for (int a : l.dims[d]) dimOf[a] = static_cast<int>(d);
  }
  return dimOf;
}

bool isPartialAxis(const TensorLayout& l, int axis) {
  return std::find(l.partialAxes.begin(), l.partialAxes.end(), axis) != l.partialAxes.end();
}

}  // namespace

std::vector<std::string> splitTopLevelKeepingTuples(std::string_view text) {
  std::string s = std::string(trimmed(text));
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(std::string(trimmed(cur)));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trimmed(cur).empty() || !parts.empty()) parts.push_back(std::string(trimmed(cur)));
  return parts;
}

std::vector<std::string> splitTopLevel(std::string_view text) {
  std::string s = std::string(trimmed(text));
  if (s.size() >= 2 && ((s.front() == '(' && s.back() == ')') || (s.front() == '[' && s.back() == ']'))) {
    // Strip one pair of outer brackets only if they enclose everything.
    int depth = 0;
    bool encloses = true;
    for (size_t i = 0; i < s.size(); ++i) {
      depth += (s[i] == '(' || s[i] == '[') - (s[i] == ')' || s[i] == ']');
      if (depth == 0 && i + 1 < s.size()) encloses = false;
    }
    // "S(0)" does not start with a bracket, so only true tuples get here.
    if (encloses) s = s.substr(1, s.size() - 2);
  }
  return splitTopLevelKeepingTuples(s);
}

std::optional<Placement> parsePlacement(std::string_view text) {
  std::string e;
  for (char c : text)
    if (c != ' ' && c != '\t') e += c;
  if (e == "Replicate()" || e == "Replicate") return Placement{Placement::Kind::Replicate};
  if (auto arg = callArgument(e, "Shard")) {
    auto dim = parseInt(*arg);
    if (!dim) return std::nullopt;
    return Placement{Placement::Kind::Shard, *dim};
  }
  if (e == "Partial") return Placement{Placement::Kind::Partial};
  if (auto arg = callArgument(e, "Partial")) {
    if (arg->empty()) return Placement{Placement::Kind::Partial};
    auto op = parseReduceOp(*arg);
    if (!op) return std::nullopt;
    return Placement{Placement::Kind::Partial, 0, *op};
  }
  return std::nullopt;
}

NotationResult<DimAxes> parseAliasMap(const std::vector<std::vector<std::string>>& perDim, const DeviceMatrix& mesh) {
  DimAxes dims;
  std::vector<int> usedBy(mesh.rank(), -1);
  for (size_t d = 0; d < perDim.size(); ++d) {
    std::vector<int> axes;
    for (const std::string& name : perDim[d]) {
      if (name == "None" && perDim[d].size() == 1) continue;
      auto axis = mesh.axisIndex(name);
      if (!axis)
        return NotationError{static_cast<int>(d), fmt::format("unknown device axis '{}' (alias_name has: {}){}", name,
                                                              meshAxisList(mesh), didYouMean(name, mesh.names))};
      if (usedBy[*axis] >= 0)
        return NotationError{static_cast<int>(d), fmt::format("device axis '{}' is used twice (dims {} and {}); an axis may "
                                                              "split only one dim",
                                                              name, usedBy[*axis], d)};
      usedBy[*axis] = static_cast<int>(d);
      axes.push_back(*axis);
    }
    dims.push_back(axes);
  }
  return dims;
}

NotationResult<DimAxes> parseTensorMapIndex(const std::vector<std::vector<int64_t>>& perDim, const DeviceMatrix& mesh) {
  DimAxes dims;
  std::vector<int> usedBy(mesh.rank(), -1);
  for (size_t d = 0; d < perDim.size(); ++d) {
    std::vector<int> axes;
    for (int64_t k : perDim[d]) {
      if (k == -1 && perDim[d].size() == 1) continue;
      if (k < 0 || k >= mesh.rank())
        return NotationError{static_cast<int>(d), fmt::format("tensor map entry {} is out of range; valid: -1 .. {} (counted "
                                                              "from the right of a device matrix of rank {})",
                                                              k, mesh.rank() - 1, mesh.rank())};
      int axis = mesh.rank() - 1 - static_cast<int>(k);
      if (usedBy[axis] >= 0)
        return NotationError{static_cast<int>(d),
                             fmt::format("tensor map entry {} is used twice (dims {} and {})", k, usedBy[axis], d)};
      usedBy[axis] = static_cast<int>(d);
      axes.push_back(axis);
    }
    dims.push_back(axes);
  }
  return dims;
}

NotationResult<AxisAssignment> parseSbp(const std::vector<std::string>& entries, const DeviceMatrix& mesh, size_t tensorRank) {
  return assignPerMeshAxis(entries, mesh, tensorRank, "sbp", "S", {"B"}, "P", "B, S(i), P or P(op)");
}

NotationResult<AxisAssignment> parsePlacements(const std::vector<std::string>& entries, const DeviceMatrix& mesh,
                                               size_t tensorRank) {
  return assignPerMeshAxis(entries, mesh, tensorRank, "placements", "Shard", {"Replicate()", "Replicate"}, "Partial",
                           "Replicate(), Shard(i), Partial() or Partial(op)");
}

NotationResult<AxisAssignment> parseDimsMapping(const std::vector<int64_t>& dimsMapping, const std::vector<int64_t>& partial,
                                                const DeviceMatrix& mesh) {
  AxisAssignment out;
  std::vector<int> usedBy(mesh.rank(), -1);
  for (size_t d = 0; d < dimsMapping.size(); ++d) {
    int64_t a = dimsMapping[d];
    if (a == -1) {
      out.dims.push_back({});
      continue;
    }
    if (a < 0 || a >= mesh.rank())
      return NotationError{static_cast<int>(d), fmt::format("dims_mapping entry {} is out of range; valid: -1 .. {} (mesh "
                                                            "axes from the left)",
                                                            a, mesh.rank() - 1)};
    if (usedBy[a] >= 0)
      return NotationError{static_cast<int>(d),
                           fmt::format("mesh axis {} is used twice in dims_mapping (dims {} and {})", a, usedBy[a], d)};
    usedBy[a] = static_cast<int>(d);
    out.dims.push_back({static_cast<int>(a)});
  }
  for (int64_t a : partial) {
    if (a < 0 || a >= mesh.rank())
      return NotationError{-1, fmt::format("partial axis {} is out of range; valid: 0 .. {}", a, mesh.rank() - 1)};
    if (usedBy[a] >= 0)
      return NotationError{-1, fmt::format("mesh axis {} cannot be both partial and split dim {}", a, usedBy[a])};
    out.partialAxes.push_back(static_cast<int>(a));
  }
  std::sort(out.partialAxes.begin(), out.partialAxes.end());
  out.partialAxes.erase(std::unique(out.partialAxes.begin(), out.partialAxes.end()), out.partialAxes.end());
  return out;
}

NotationResult<TensorLayout> layoutFromStrategy(const IntTuple& strategy, int64_t deviceNum, const Shape& shape) {
  int64_t used = 1;
  for (size_t i = 0; i < strategy.size(); ++i) {
    if (strategy[i] < 1) return NotationError{static_cast<int>(i), fmt::format("strategy entry {} must be >= 1", strategy[i])};
    used *= strategy[i];
  }
  if (deviceNum < 1 || deviceNum % used != 0)
    return NotationError{-1, fmt::format("strategy {} uses {} devices, which does not divide device_num {}",
                                         formatIntTuple(strategy), used, deviceNum)};
  std::vector<int64_t> dev = strategy;
  if (used < deviceNum) dev.push_back(deviceNum / used);  // repeated calculation, on the right
  TensorLayout l;
  l.mesh = DeviceMatrix::unnamed(dev);
  l.shape = shape;
  for (size_t i = 0; i < strategy.size(); ++i) l.dims.push_back({static_cast<int>(i)});
  return l;
}

std::string printAliasLayout(const TensorLayout& l) {
  std::vector<std::string> entries;
  for (const auto& axes : l.dims) {
    if (axes.empty()) {
      entries.push_back("None");
    } else if (axes.size() == 1) {
      entries.push_back(l.mesh.names.at(axes[0]));
    } else {
      std::vector<std::string> names;
      for (int a : axes) names.push_back(l.mesh.names.at(a));
      entries.push_back(fmt::format("({})", fmt::join(names, ", ")));
    }
  }
  return fmt::format("({})", fmt::join(entries, ", "));
}

std::string printStrategy(const TensorLayout& l) {
  std::vector<int64_t> splits;
  for (size_t d = 0; d < l.dims.size(); ++d) splits.push_back(l.splitsOfDim(d));
  return formatIntTuple(splits);
}

std::optional<std::string> printSbp(const TensorLayout& l) {
  auto dimOf = dimPerMeshAxis(l);
  if (!dimOf) return std::nullopt;
  std::vector<std::string> entries;
  for (int a = 0; a < l.mesh.rank(); ++a) {
    if (isPartialAxis(l, a)) entries.push_back("P" + partialSuffix(l));
    else if ((*dimOf)[a] >= 0) entries.push_back(fmt::format("S({})", (*dimOf)[a]));
    else entries.push_back("B");
  }
  return fmt::format("({})", fmt::join(entries, ", "));
}

std::optional<std::string> printPlacements(const TensorLayout& l) {
  auto dimOf = dimPerMeshAxis(l);
  if (!dimOf) return std::nullopt;
  std::vector<std::string> entries;
  for (int a = 0; a < l.mesh.rank(); ++a) {
    if (isPartialAxis(l, a)) entries.push_back(fmt::format("Partial({})", reduceOpName(l.partialOp)));
    else if ((*dimOf)[a] >= 0) entries.push_back(fmt::format("Shard({})", (*dimOf)[a]));
    else entries.push_back("Replicate()");
  }
  return fmt::format("({})", fmt::join(entries, ", "));
}

std::optional<std::vector<std::string>> placementsOf(const TensorLayout& l) {
  auto dimOf = dimPerMeshAxis(l);
  if (!dimOf) return std::nullopt;
  std::vector<std::string> entries;
  for (int a = 0; a < l.mesh.rank(); ++a) {
    if (l.mesh.dims[a] == 1) continue;
    if (isPartialAxis(l, a)) entries.push_back(fmt::format("Partial({})", reduceOpName(l.partialOp)));
    else if ((*dimOf)[a] >= 0) entries.push_back(fmt::format("Shard({})", (*dimOf)[a]));
    else entries.push_back("Replicate()");
  }
  return entries;
}

std::optional<std::string> printDimsMapping(const TensorLayout& l) {
  std::vector<int> entries;
  for (const auto& axes : l.dims) {
    if (axes.size() > 1) return std::nullopt;
    entries.push_back(axes.empty() ? -1 : axes[0]);
  }
  return fmt::format("[{}]", fmt::join(entries, ", "));
}

std::string printTensorMapIndex(const TensorLayout& l) {
  std::vector<std::string> entries;
  for (const auto& e : l.tensorMapEntries()) {
    if (e.empty()) entries.push_back("-1");
    else if (e.size() == 1) entries.push_back(std::to_string(e[0]));
    else entries.push_back(fmt::format("({})", fmt::join(e, ", ")));
  }
  return fmt::format("[{}]", fmt::join(entries, ", "));
}

}  // namespace irc
