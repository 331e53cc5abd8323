// `irc layout`: describes one tensor layout (spec/cli.md): every notation, every rank's slice.
#include <iostream>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "dumps/layout_description.h"
#include "ir/layout_notation.h"
#include "ir/limits.h"
#include "cli/cli_util.h"
#include "cli/command_specs.h"
#include "cli/commands.h"

namespace irc::cli {
namespace {

// A problem with the layout itself (not with the flags): exit status 1.
struct LayoutRejected {
  std::string message;
};

std::vector<std::string> namesArg(const std::string& value) { return splitTopLevel(value); }

// The per-dim entries of a tensor map argument. Square brackets around the whole list are
// dropped; a parenthesised entry is one dim on several axes (cli.md), also when it is the only
// one: `(ax1,ax0)` is one dim, not two.
std::vector<std::string> dimEntries(const std::string& value) {
  std::string s = value;
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  return splitTopLevelKeepingTuples(s);
}

std::vector<std::vector<int64_t>> tensorMapIndexArg(const std::string& value) {
  std::vector<std::vector<int64_t>> perDim;
  for (const std::string& entry : dimEntries(value)) {
    std::vector<int64_t> axes;
    for (const std::string& part : splitTopLevel(entry)) axes.push_back(parseIntArg("--tensor-map-index", part));
    perDim.push_back(axes);
  }
  return perDim;
}

template <typename T>
T take(NotationResult<T> r, const std::string& flag) {
  if (auto* e = std::get_if<NotationError>(&r))
    throw LayoutRejected{e->entry >= 0 ? fmt::format("{} entry {}: {}", flag, e->entry, e->message)
                                       : fmt::format("{}: {}", flag, e->message)};
  return std::get<T>(std::move(r));
}

// The command line of `irc layout`, read but not yet interpreted.
struct LayoutArgs {
  std::optional<std::vector<int64_t>> deviceMatrix, shape, strategy, dimsMapping, partial;
  std::optional<int64_t> deviceNum;
  std::optional<std::vector<std::string>> alias;
  std::string flag, value;  // the one layout notation
};

LayoutArgs parseLayoutArgs(const std::vector<std::string>& args, bool& json, ColorMode& color, int64_t& maxRanks) {
  const CommandSpec& spec = commandSpec("layout");
  ArgScanner scan(args, flagsWithValue(spec), switchFlags(spec));
  LayoutArgs a;
  std::vector<std::pair<std::string, std::string>> notations;
  while (!scan.done()) {
    auto item = scan.next();
    const std::string& f = item.flag;
    if (f.empty()) throw UsageError(fmt::format("irc layout takes no positional argument; got '{}'", item.value));
    if (f == "--json") json = true;
    else if (f == "--color") color = parseColorMode(item.value);
    else if (f == "--max-ranks") maxRanks = parsePositiveIntArg(f, item.value);
    else if (f == "--device-matrix") a.deviceMatrix = parseIntListArg(f, item.value);
    else if (f == "--alias") a.alias = namesArg(item.value);
    else if (f == "--shape") a.shape = parseIntListArg(f, item.value);
    else if (f == "--device-num") a.deviceNum = parseIntArg(f, item.value);
    else if (f == "--partial") a.partial = parseIntListArg(f, item.value);
    else if (f == "--strategy") {
      a.strategy = parseIntListArg(f, item.value);
      notations.emplace_back(f, item.value);
    } else {
      if (f == "--dims-mapping") a.dimsMapping = parseIntListArg(f, item.value);
      notations.emplace_back(f, item.value);
    }
  }
  if (notations.size() != 1)
    throw UsageError(notations.empty() ? "irc layout needs one of --tensor-map, --tensor-map-index, --sbp, --placements, "
                                         "--dims-mapping, --strategy (see 'irc --help')"
                                       : "irc layout takes exactly one layout notation");
  if (a.partial && !a.dimsMapping) throw UsageError("--partial goes with --dims-mapping");
  std::tie(a.flag, a.value) = notations[0];
  return a;
}

// `--strategy` (MindSpore's shard tuple): the device matrix follows from it.
TensorLayout layoutOfStrategy(const LayoutArgs& a) {
  if (a.deviceMatrix || a.alias) throw UsageError("--strategy derives the device matrix; give --device-num, not --device-matrix");
  int64_t devices = a.deviceNum.value_or(1);
  for (int64_t s : *a.strategy)
    if (s < 1) throw UsageError(fmt::format("--strategy entries must be >= 1; got {}", s));
  if (!a.deviceNum) {
    auto product = checkedProduct(*a.strategy);
    if (!product || *product > kMaxDeviceNum)
      throw LayoutRejected{fmt::format("--strategy {} uses more than {} devices (docs/limits.md)", a.value, kMaxDeviceNum)};
    devices = *product;
  }
  if (devices < 1 || devices > kMaxDeviceNum)
    throw LayoutRejected{fmt::format("--device-num must be in 1 .. {} (docs/limits.md); got {}", kMaxDeviceNum, devices)};
  Shape defaultShape = *a.strategy;
  return take(layoutFromStrategy(*a.strategy, devices, a.shape.value_or(defaultShape)), a.flag);
}

// The other notations, over --device-matrix (with --alias).
TensorLayout layoutOnMesh(const LayoutArgs& a) {
  const std::string& flag = a.flag;
  if (!a.deviceMatrix) throw UsageError(fmt::format("{} needs --device-matrix", flag));
  if (a.deviceNum) throw UsageError("--device-num goes with --strategy; the device matrix gives the device count");
  for (int64_t d : *a.deviceMatrix)
    if (d < 1) throw UsageError(fmt::format("--device-matrix entries must be >= 1; got {}", d));
  if (auto n = checkedProduct(*a.deviceMatrix); !n || *n > kMaxDeviceNum)
    throw LayoutRejected{fmt::format("--device-matrix {} has more than {} devices (docs/limits.md)",
                                     formatIntTuple(*a.deviceMatrix), kMaxDeviceNum)};
  TensorLayout layout;
  layout.mesh = DeviceMatrix::unnamed(*a.deviceMatrix);
  if (a.alias) {
    if (a.alias->size() != a.deviceMatrix->size())
      throw UsageError(
          fmt::format("--alias has {} names; the device matrix has {} axes", a.alias->size(), a.deviceMatrix->size()));
    layout.mesh.names = *a.alias;
  }
  const DeviceMatrix& mesh = layout.mesh;
  AxisAssignment assignment;
  if (flag == "--tensor-map") {
    std::vector<std::vector<std::string>> perDim;
    for (const std::string& entry : dimEntries(a.value)) perDim.push_back(splitTopLevel(entry));
    assignment.dims = take(parseAliasMap(perDim, mesh), flag);
  } else if (flag == "--tensor-map-index") {
    assignment.dims = take(parseTensorMapIndex(tensorMapIndexArg(a.value), mesh), flag);
  } else if (flag == "--dims-mapping") {
    assignment = take(parseDimsMapping(*a.dimsMapping, a.partial.value_or(std::vector<int64_t>{}), mesh), flag);
  } else {
    size_t rank = a.shape ? a.shape->size() : 0;
    if (!a.shape) {
      // Without --shape the rank is the largest dim an entry names, plus one.
      for (const std::string& e : splitTopLevel(a.value)) {
        auto open = e.find('('), close = e.find(')');
        if (open != std::string::npos && close > open + 1 && std::isdigit(static_cast<unsigned char>(e[open + 1])))
          rank = std::max<size_t>(rank, std::stoul(e.substr(open + 1)) + 1);
      }
    }
    assignment =
        take(flag == "--sbp" ? parseSbp(splitTopLevel(a.value), mesh, rank) : parsePlacements(splitTopLevel(a.value), mesh, rank),
             flag);
  }
  layout.dims = assignment.dims;
  layout.partialAxes = assignment.partialAxes;
  layout.partialOp = assignment.partialOp;
  if (a.shape) {
    layout.shape = *a.shape;
  } else {
    for (size_t d = 0; d < layout.dims.size(); ++d) layout.shape.push_back(layout.splitsOfDim(d));
  }
  return layout;
}

TensorLayout buildLayout(const std::vector<std::string>& args, bool& json, ColorMode& color, int64_t& maxRanks) {
  LayoutArgs a = parseLayoutArgs(args, json, color, maxRanks);
  TensorLayout layout = a.flag == "--strategy" ? layoutOfStrategy(a) : layoutOnMesh(a);
  if (layout.shape.size() != layout.dims.size())
    throw LayoutRejected{fmt::format("--shape {} has rank {}; the layout has {} dims", formatShape(layout.shape),
                                     layout.shape.size(), layout.dims.size())};
  for (int64_t d : layout.shape)
    if (d < 1) throw UsageError(fmt::format("--shape entries must be >= 1; got {}", d));
  if (!withinElementLimit(layout.shape))
    throw LayoutRejected{
        fmt::format("--shape {} has more than {} elements (docs/limits.md)", formatShape(layout.shape), kMaxTensorElements)};
  if (auto problem = validateLayout(layout, "the tensor")) throw LayoutRejected{problem->message};
  // The output has one row per rank: refuse a table nobody can read before building it.
  if (layout.mesh.deviceCount() > maxRanks)
    throw LayoutRejected{
        fmt::format("the device matrix has {} ranks; irc layout prints one row per rank and stops at {} "
                    "(raise it with --max-ranks N)",
                    layout.mesh.deviceCount(), maxRanks)};
  return layout;
}

}  // namespace

ExitStatus runLayout(const std::vector<std::string>& args) {
  bool json = false;
  ColorMode color = ColorMode::Auto;
  int64_t maxRanks = kDefaultMaxRanks;
  try {
    TensorLayout layout = buildLayout(args, json, color, maxRanks);
    if (json) std::cout << layoutJson(layout).dump() << "\n";
    else std::cout << layoutText(layout, useColor(color, stdout));
    return ExitStatus::Ok;
  } catch (const LayoutRejected& e) {
    std::cerr << "irc layout: error: " << e.message << "\n";
    return ExitStatus::Rejected;
  }
}

}  // namespace irc::cli
