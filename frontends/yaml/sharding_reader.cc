#include "frontends/yaml/sharding_reader.h"

#include "ir/limits.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/layout_notation.h"
#include "ir/tensor_layout.h"

namespace irc {
namespace {

const std::vector<std::string> kShardingKeys = {"layout",   "sbp",  "placements", "dims_mapping", "partial",
                                                "priority", "open", "replicated", "unreduced"};
const std::vector<std::string> kNotationKeys = {"layout", "sbp", "placements", "dims_mapping"};

// Checks a resolved layout against the tensor (divisibility, axes twice); reports at `node`, or
// at the dim's entry when the problem names one.
bool checkLayout(YamlReader& reader, const YamlNode& node, const TensorLayout& layout, const std::string& tensorName) {
  auto problem = validateLayout(layout, tensorName);
  if (!problem) return true;
  if (problem->dim >= 0 && node.IsSequence() && static_cast<size_t>(problem->dim) < node.size())
    reader.error(node[problem->dim], problem->message);
  else reader.error(node, problem->message);
  return false;
}

// One tensor map in Layout form: entries are an alias, None, or a list of aliases.
std::optional<DimAxes> readAliasMap(YamlReader& reader, const YamlNode& node, std::string_view what, const DeviceMatrix& mesh) {
  if (!reader.sequence(node, what)) return std::nullopt;
  std::vector<std::vector<std::string>> perDim;
  for (const YamlNode& entry : node) {
    std::vector<std::string> names;
    if (entry.IsScalar()) {
      names.push_back(entry.Scalar());
    } else if (entry.IsSequence()) {
      for (const YamlNode& n : entry) {
        if (!n.IsScalar()) {
          reader.error(n, fmt::format("{} entries must be alias names or None; got {}", what, describeNode(n)));
          return std::nullopt;
        }
        names.push_back(n.Scalar());
      }
    } else {
      reader.error(entry,
                   fmt::format("{} entries must be an alias, None or a list of aliases; got {}", what, describeNode(entry)));
      return std::nullopt;
    }
    perDim.push_back(names);
  }
  auto parsed = parseAliasMap(perDim, mesh);
  if (auto* err = std::get_if<NotationError>(&parsed)) {
    reader.error(err->entry >= 0 ? node[err->entry] : node, err->message);
    return std::nullopt;
  }
  return std::get<DimAxes>(parsed);
}

std::string tensorNames(const std::vector<AnnotatedTensor>& tensors) {
  std::vector<std::string> names;
  for (const auto& t : tensors) names.push_back(fmt::format("'{}'", t.name));
  return fmt::format("{}", fmt::join(names, ", "));
}

const DeviceMatrix* requireMesh(YamlReader& reader, const YamlNode& node, const ParallelConfig& parallel, std::string_view what) {
  if (parallel.mesh) return &*parallel.mesh;
  reader.error(node, fmt::format("{} names device axes, but the model has no parallel.device_matrix (add device_matrix "
                                 "and alias_name to 'parallel')",
                                 what));
  return nullptr;
}

template <typename T>
bool takeNotation(YamlReader& reader, const YamlNode& node, const NotationResult<T>& r, T& out) {
  if (auto* err = std::get_if<NotationError>(&r)) {
    reader.error(err->entry >= 0 && node.IsSequence() && static_cast<size_t>(err->entry) < node.size() ? node[err->entry] : node,
                 err->message);
    return false;
  }
  out = std::get<T>(r);
  return true;
}

}  // namespace

std::optional<ShardStrategy> readStrategy(YamlReader& reader, const YamlNode& node, std::string_view what,
                                          const std::vector<AnnotatedTensor>& tensors, int64_t deviceNum) {
  if (!reader.sequence(node, what)) return std::nullopt;
  if (node.size() != tensors.size()) {
    reader.error(node, fmt::format("{} has {} tuples; it needs one per tensor input ({}: {})", what, node.size(), tensors.size(),
                                   tensorNames(tensors)));
    return std::nullopt;
  }
  ShardStrategy strategy;
  bool ok = true;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const YamlNode& tuple = node[t];
    auto values = reader.intList(tuple, fmt::format("{} tuple {}", what, t));
    if (!values) {
      ok = false;
      continue;
    }
    const AnnotatedTensor& tensor = tensors[t];
    if (values->size() != tensor.shape.size()) {
      reader.error(tuple, fmt::format("{} tuple {} has {} entries; '{}' has rank {} (shape {})", what, t, values->size(),
                                      tensor.name, tensor.shape.size(), formatShape(tensor.shape)));
      ok = false;
      continue;
    }
    int64_t product = 1;
    bool tupleOk = true;
    for (size_t d = 0; d < values->size(); ++d) {
      int64_t s = (*values)[d];
      if (s < 1 || tensor.shape[d] % s != 0) {
        reader.error(tuple[d], fmt::format("{}: {} does not divide dim {} of '{}' (size {}); valid: {}", what, s, d, tensor.name,
                                           tensor.shape[d], divisorsText(tensor.shape[d])));
        tupleOk = false;
      }
      auto next = checkedMul(product, std::max<int64_t>(s, 1));
      if (!next) {
        if (tupleOk)
          reader.error(tuple, fmt::format("{}: {} for '{}' uses more devices than a 64-bit integer holds; device_num is {}", what,
                                          formatIntTuple(*values), tensor.name, deviceNum));
        tupleOk = false;
        break;
      }
      product = *next;
    }
    if (tupleOk && deviceNum % product != 0) {
      reader.error(tuple, fmt::format("{}: {} for '{}' uses {} devices, which does not divide device_num {}", what,
                                      formatIntTuple(*values), tensor.name, product, deviceNum));
      tupleOk = false;
    }
    ok = ok && tupleOk;
    strategy.push_back(*values);
  }
  return ok ? std::optional(strategy) : std::nullopt;
}

std::optional<std::vector<DimAxes>> readLayouts(YamlReader& reader, const YamlNode& node, std::string_view what,
                                                const std::vector<AnnotatedTensor>& tensors, const ParallelConfig& parallel,
                                                SourceLoc) {
  const DeviceMatrix* mesh = requireMesh(reader, node, parallel, what);
  if (!mesh || !reader.sequence(node, what)) return std::nullopt;
  if (node.size() != tensors.size()) {
    reader.error(node, fmt::format("{} has {} tensor maps; it needs one per tensor ({}: {})", what, node.size(), tensors.size(),
                                   tensorNames(tensors)));
    return std::nullopt;
  }
  std::vector<DimAxes> out;
  bool ok = true;
  for (size_t t = 0; t < tensors.size(); ++t) {
    auto dims = readAliasMap(reader, node[t], fmt::format("{} entry {}", what, t), *mesh);
    if (!dims) {
      ok = false;
      continue;
    }
    if (dims->size() != tensors[t].shape.size()) {
      reader.error(node[t], fmt::format("{} entry {} has {} dims; '{}' has rank {} (shape {})", what, t, dims->size(),
                                        tensors[t].name, tensors[t].shape.size(), formatShape(tensors[t].shape)));
      ok = false;
      continue;
    }
    TensorLayout layout{*mesh, tensors[t].shape, *dims, {}, ReduceOp::Sum};
    ok = checkLayout(reader, node[t], layout, tensors[t].name) && ok;
    out.push_back(*dims);
  }
  return ok ? std::optional(out) : std::nullopt;
}

namespace {

// The axes per dim (and any partial axes) one notation writes; sets `notation`.
std::optional<AxisAssignment> readNotation(YamlReader& reader, const YamlNode& node, const std::string& key,
                                           const YamlNode& value, const std::string& what, const DeviceMatrix& mesh, size_t rank,
                                           ShardingNotation& notation) {
  AxisAssignment assignment;
  if (key == "layout") {
    notation = ShardingNotation::Layout;
    auto dims = readAliasMap(reader, value, what, mesh);
    if (!dims) return std::nullopt;
    assignment.dims = *dims;
    return assignment;
  }
  if (key == "sbp" || key == "placements") {
    notation = key == "sbp" ? ShardingNotation::Sbp : ShardingNotation::Placements;
    auto entries = reader.stringList(value, fmt::format("{} ({})", what, key));
    if (!entries) return std::nullopt;
    auto r = key == "sbp" ? parseSbp(*entries, mesh, rank) : parsePlacements(*entries, mesh, rank);
    if (!takeNotation(reader, value, r, assignment)) return std::nullopt;
    return assignment;
  }
  notation = ShardingNotation::DimsMapping;
  auto map = reader.intList(value, fmt::format("{} (dims_mapping)", what));
  if (!map) return std::nullopt;
  std::vector<int64_t> partial;
  if (auto p = reader.optional(node, "partial")) {
    auto list = reader.intList(*p, fmt::format("{} (partial)", what));
    if (!list) return std::nullopt;
    partial = *list;
  }
  if (!takeNotation(reader, value, parseDimsMapping(*map, partial, mesh), assignment)) return std::nullopt;
  return assignment;
}

// A partial state in a tensor sharding is refused (and `partial:` outside dims_mapping).
bool rejectPartial(YamlReader& reader, const YamlNode& node, const std::string& key, const YamlNode& value,
                   const std::string& what, const DeviceMatrix& mesh, const AxisAssignment& assignment, bool opResult) {
  if (key != "dims_mapping")
    if (auto p = reader.optional(node, "partial")) {
      reader.error(*p, fmt::format("'partial' goes with dims_mapping; in {} write partial axes as {}", key,
                                   key == "sbp"          ? "P"
                                   : key == "placements" ? "Partial()"
                                                         : "a dims_mapping"));
      return false;
    }
  if (assignment.partialAxes.empty() || opResult) return true;
  // A declared partial state of an input or parameter cannot be honoured: it is fed whole, and
  // accepting it would only relabel a whole value as partial, whose consumer would sum copies
  // (docs/model-format.md). An op's result may stay partial: the op computes partial sums.
  reader.error(value, fmt::format("{} declares a partial state over device axis '{}'; a tensor sharding may only "
                                  "split or replicate (write {} for that axis): partial results come from ops "
                                  "that reduce over a split dim, and irc completes them itself",
                                  what, mesh.names[assignment.partialAxes[0]],
                                  key == "sbp"          ? "B"
                                  : key == "placements" ? "Replicate()"
                                                        : "no 'partial' entry"));
  return false;
}

// Shardy's extras: `priority`, `open` dims, `replicated` axes.
bool readShardyExtras(YamlReader& reader, const YamlNode& node, const AnnotatedTensor& tensor, const DeviceMatrix& mesh,
                      TensorSharding& sharding) {
  size_t rank = tensor.shape.size();
  if (auto p = reader.optional(node, "priority")) {
    auto v = reader.integer(*p, "priority");
    if (!v) return false;
    if (*v < 0) {
      reader.error(*p, fmt::format("priority must be >= 0 (0 is highest); got {}", *v));
      return false;
    }
    sharding.priority = *v;
  }
  sharding.open.assign(rank, false);
  if (auto o = reader.optional(node, "open")) {
    if (!reader.sequence(*o, "open")) return false;
    if (o->size() != rank) {
      reader.error(*o, fmt::format("open has {} entries; '{}' has rank {}", o->size(), tensor.name, rank));
      return false;
    }
    for (size_t d = 0; d < rank; ++d) {
      auto b = reader.boolean((*o)[d], "open entry");
      if (!b) return false;
      sharding.open[d] = *b;
    }
  }
  if (auto r = reader.optional(node, "replicated")) {
    auto names = reader.stringList(*r, "replicated");
    if (!names) return false;
    for (size_t i = 0; i < names->size(); ++i) {
      auto axis = mesh.axisIndex((*names)[i]);
      if (!axis) {
        reader.error((*r)[i], fmt::format("unknown device axis '{}' (alias_name has: {})", (*names)[i],
                                          fmt::format("{}", fmt::join(mesh.names, ", "))));
        return false;
      }
      for (const auto& axes : sharding.dims)
        if (std::find(axes.begin(), axes.end(), *axis) != axes.end()) {
          reader.error((*r)[i], fmt::format("device axis '{}' is listed as replicated but the sharding splits a dim over it",
                                            (*names)[i]));
          return false;
        }
      sharding.replicatedAxes.push_back(*axis);
    }
  }
  return true;
}

}  // namespace

std::optional<TensorSharding> readTensorSharding(YamlReader& reader, const YamlNode& node, const AnnotatedTensor& tensor,
                                                 const ParallelConfig& parallel, bool opResult) {
  std::string what = fmt::format("the sharding of '{}'", tensor.name);
  if (!reader.checkMap(node, what, kShardingKeys)) return std::nullopt;
  std::vector<std::string> given;
  for (const auto& k : kNotationKeys)
    if (reader.optional(node, k)) given.push_back(k);
  if (given.size() != 1) {
    reader.error(node, given.empty() ? fmt::format("{} needs exactly one of: {}", what, "layout, sbp, placements, dims_mapping")
                                     : fmt::format("{} gives {} notations ({}); use exactly one", what, given.size(),
                                                   fmt::format("{}", fmt::join(given, ", "))));
    return std::nullopt;
  }
  const DeviceMatrix* mesh = requireMesh(reader, node, parallel, what);
  if (!mesh) return std::nullopt;
  const std::string& key = given[0];
  YamlNode value = *reader.optional(node, key);
  TensorSharding sharding;
  sharding.loc = locOf(node);
  size_t rank = tensor.shape.size();
  auto assignment = readNotation(reader, node, key, value, what, *mesh, rank, sharding.notation);
  if (!assignment || !rejectPartial(reader, node, key, value, what, *mesh, *assignment, opResult)) return std::nullopt;
  // Shardy's `unreduced: [tp]`: the axes an op's result keeps unreduced (partial sums).
  if (auto u = reader.optional(node, "unreduced")) {
    auto names = reader.stringList(*u, fmt::format("{} (unreduced)", what));
    if (!names) return std::nullopt;
    if (!opResult) {
      reader.error(*u, fmt::format("{}: only an op's result may be unreduced; an input or parameter is fed whole", what));
      return std::nullopt;
    }
    for (const std::string& n : *names) {
      auto axis = mesh->axisIndex(n);
      if (!axis) {
        reader.error(
            *u, fmt::format("{}: unreduced axis '{}' is not an axis of the mesh ({})", what, n, fmt::join(mesh->names, ", ")));
        return std::nullopt;
      }
      if (std::find(assignment->partialAxes.begin(), assignment->partialAxes.end(), *axis) == assignment->partialAxes.end())
        assignment->partialAxes.push_back(*axis);
    }
    std::sort(assignment->partialAxes.begin(), assignment->partialAxes.end());
  }
  if (assignment->dims.size() != rank) {
    reader.error(value, fmt::format("{} has {} dims; '{}' has rank {} (shape {})", what, assignment->dims.size(), tensor.name,
                                    rank, formatShape(tensor.shape)));
    return std::nullopt;
  }
  TensorLayout layout{*mesh, tensor.shape, assignment->dims, assignment->partialAxes, assignment->partialOp};
  if (!checkLayout(reader, value, layout, tensor.name)) return std::nullopt;
  sharding.dims = assignment->dims;
  sharding.partialAxes = assignment->partialAxes;
  sharding.partialOp = assignment->partialOp;
  if (!readShardyExtras(reader, node, tensor, *mesh, sharding)) return std::nullopt;
  return sharding;
}

}  // namespace irc
