#include "dumps/layout_description.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/layout_notation.h"

namespace irc {
namespace {

nlohmann::ordered_json tensorMapJson(const TensorLayout& l) {
  nlohmann::ordered_json map = nlohmann::ordered_json::array();
  for (const auto& e : l.tensorMapEntries()) {
    if (e.empty()) map.push_back(-1);
    else if (e.size() == 1) map.push_back(e[0]);
    else map.push_back(e);
  }
  return map;
}

nlohmann::ordered_json orNull(const std::optional<std::string>& s) {
  return s ? nlohmann::ordered_json(*s) : nlohmann::ordered_json(nullptr);
}

std::string rangesText(const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  std::vector<std::string> parts;
  for (const auto& [b, e] : ranges) parts.push_back(fmt::format("{}:{}", b, e));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

}  // namespace

nlohmann::ordered_json layoutJson(const TensorLayout& l) {
  nlohmann::ordered_json j;
  j["device_matrix"] = l.mesh.dims;
  j["alias_name"] = l.mesh.names;
  j["shape"] = l.shape;
  j["tensor_map"] = tensorMapJson(l);
  j["partial"] = l.partialFromRight();
  if (l.isPartial()) j["partial_op"] = std::string(reduceOpName(l.partialOp));
  j["notations"] = {{"layout", printAliasLayout(l)},
                    {"strategy", printStrategy(l)},
                    {"sbp", orNull(printSbp(l))},
                    {"placements", orNull(printPlacements(l))},
                    {"dims_mapping", orNull(printDimsMapping(l))},
                    {"tensor_map", printTensorMapIndex(l)}};
  j["slice_shape"] = l.sliceShape();
  nlohmann::ordered_json ranks = nlohmann::ordered_json::array();
  for (int64_t r = 0; r < l.mesh.deviceCount(); ++r) {
    nlohmann::ordered_json slice = nlohmann::ordered_json::array();
    for (const auto& [b, e] : l.sliceRanges(r)) slice.push_back({b, e});
    ranks.push_back({{"rank", r},
                     {"coord", l.mesh.coord(r)},
                     {"shard", l.shardNumber(r)},
                     {"slice", slice},
                     {"replica_group", l.replicaGroup(r)}});
  }
  j["ranks"] = ranks;
  return j;
}

std::string meshPicture(const TensorLayout& l, bool color) {
  const auto& dims = l.mesh.dims;
  int n = l.mesh.rank();
  int64_t rows = n >= 2 ? dims[n - 2] : 1, cols = n >= 1 ? dims[n - 1] : 1;
  int64_t grids = l.mesh.deviceCount() / (rows * cols);
  int width = static_cast<int>(fmt::format("r{}:s{}", l.mesh.deviceCount() - 1, l.mesh.deviceCount() - 1).size());
  std::string out;
  for (int64_t g = 0; g < grids; ++g) {
    int64_t base = g * rows * cols;
    if (grids > 1) {
      std::vector<int64_t> lead = l.mesh.coord(base);
      lead.resize(n - std::min(n, 2));
      std::vector<std::string> parts;
      for (size_t a = 0; a < lead.size(); ++a) parts.push_back(fmt::format("{}={}", l.mesh.names[a], lead[a]));
      out += fmt::format("{}:\n", fmt::join(parts, ", "));
    }
    out += fmt::format("{:>{}}", "", width);
    for (int64_t c = 0; c < cols; ++c) out += fmt::format(" {:>{}}", c, width);
    out += "\n";
    for (int64_t r = 0; r < rows; ++r) {
      out += fmt::format("{:>{}}", r, width);
      for (int64_t c = 0; c < cols; ++c) {
        int64_t rank = base + r * cols + c;
        int64_t shard = l.shardNumber(rank);
        std::string cell = fmt::format("{:>{}}", fmt::format("r{}:s{}", rank, shard), width);
        // Same block, same colour: 6 distinguishable background colours cycle over shards.
        if (color) cell = fmt::format("\033[30;{}m{}\033[0m", 41 + shard % 6, cell);
        out += " " + cell;
      }
      out += "\n";
    }
  }
  return out;
}

std::string layoutText(const TensorLayout& l, bool color) {
  std::string out;
  out += fmt::format("device matrix  {}  ({})\n", formatIntList(l.mesh.dims), fmt::join(l.mesh.names, ", "));
  out += fmt::format("tensor shape   {}\n", formatShape(l.shape));
  out += fmt::format("layout         {}\n", printAliasLayout(l));
  out += fmt::format("tensor map     {}  (MindSpore, axes counted from the right)\n", printTensorMapIndex(l));
  out += fmt::format("strategy       {}\n", printStrategy(l));
  out += fmt::format("sbp            {}\n", printSbp(l).value_or("(not expressible)"));
  out += fmt::format("placements     {}\n", printPlacements(l).value_or("(not expressible)"));
  out +=
      fmt::format("dims_mapping   {}{}\n", printDimsMapping(l).value_or("(not expressible)"),
                  l.isPartial() ? fmt::format("  partial {}", formatIntList({l.partialAxes.begin(), l.partialAxes.end()})) : "");
  if (l.isPartial())
    out += fmt::format("partial        over {} ({})\n", formatIntList({l.partialAxes.begin(), l.partialAxes.end()}),
                       reduceOpName(l.partialOp));
  out += fmt::format("slice shape    {}\n\n", formatShape(l.sliceShape()));
  out += fmt::format("{:>5}  {:<14} {:>5}  {:<24} {}\n", "rank", "coord", "shard", "slice", "replica group");
  for (int64_t r = 0; r < l.mesh.deviceCount(); ++r) {
    std::vector<int64_t> c = l.mesh.coord(r);
    out += fmt::format("{:>5}  {:<14} {:>5}  {:<24} {}\n", r, formatIntList(c), l.shardNumber(r), rangesText(l.sliceRanges(r)),
                       formatIntList(l.replicaGroup(r)));
  }
  int n = l.mesh.rank();
  out += n >= 2 ? fmt::format("\nmesh (rank:shard; rows {}, columns {})\n", l.mesh.names[n - 2], l.mesh.names[n - 1])
                : fmt::format("\nmesh (rank:shard; columns {})\n", l.mesh.names[0]);
  out += meshPicture(l, color);
  return out;
}

}  // namespace irc
