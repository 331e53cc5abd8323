#pragma once
// Parsers and printers for every notation of a tensor layout (spec/parallel-semantics.md §1):
//   MindSpore shard strategy + device_num   (2, 1) on 8 devices -> dev [2, 1, 4], map [2, 1]
//   MindSpore integer tensor map            [1, -1] (axes counted from the right)
//   Layout alias form                       (dp, None), ((dp, mp), None)
//   OneFlow nd-SBP                          (S(0), B), P
//   DTensor placements                      (Shard(0), Replicate()), Partial(sum)
//   Paddle dims_mapping + partial           [0, -1], partial [1]
// Parsers take already split entries so that callers (YAML nodes, command-line lists) can
// point a diagnostic at the entry at fault.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor_layout.h"

namespace irc {

struct NotationError {
  int entry = -1;  // the entry at fault, or -1 for the whole
  std::string message;
};

template <typename T>
using NotationResult = std::variant<T, NotationError>;

// One DTensor placement as torch writes it (a plan's `input_layouts`/`output_layouts`): Shard(d),
// d < 0 counting from the end; Replicate(); Partial() or Partial(op). Blanks are ignored. The
// per-axis list (parsePlacements) reads its entries with the same helpers.
struct Placement {
  enum class Kind { Shard, Replicate, Partial } kind = Kind::Replicate;
  int64_t dim = 0;
  ReduceOp op = ReduceOp::Sum;
};
std::optional<Placement> parsePlacement(std::string_view text);

// The part of a layout a notation states: the tensor map and the partial axes.
struct AxisAssignment {
  DimAxes dims;
  std::vector<int> partialAxes;
  ReduceOp partialOp = ReduceOp::Sum;
};

// Layout form: per tensor dim the alias names splitting it, major first; {"None"} or {} = not split.
NotationResult<DimAxes> parseAliasMap(const std::vector<std::vector<std::string>>& perDim, const DeviceMatrix& mesh);
// MindSpore integer form: per dim the axis indices counted from the right (-1 = not split).
NotationResult<DimAxes> parseTensorMapIndex(const std::vector<std::vector<int64_t>>& perDim, const DeviceMatrix& mesh);
// nd-SBP: one entry per mesh axis: B, S(i), P, P(sum|max|min|prod).
NotationResult<AxisAssignment> parseSbp(const std::vector<std::string>& entries, const DeviceMatrix& mesh, size_t tensorRank);
// DTensor: one entry per mesh axis: Replicate(), Shard(i), Partial(), Partial(sum|max|min|prod).
NotationResult<AxisAssignment> parsePlacements(const std::vector<std::string>& entries, const DeviceMatrix& mesh,
                                               size_t tensorRank);
// Paddle: per tensor dim a mesh axis index from the left (-1 = none), plus partial mesh axes.
NotationResult<AxisAssignment> parseDimsMapping(const std::vector<int64_t>& dimsMapping, const std::vector<int64_t>& partial,
                                                const DeviceMatrix& mesh);
// MindSpore `.shard()`: device matrix = strategy, identity tensor map; when the strategy uses
// fewer than `deviceNum` devices the repeat is appended on the right (+1 shift of the map).
NotationResult<TensorLayout> layoutFromStrategy(const IntTuple& strategy, int64_t deviceNum, const Shape& shape);

// Printers. Notations that cannot express a layout (several axes on one dim nested against mesh
// order for SBP, several axes on one dim for dims_mapping) give nullopt.
std::string printAliasLayout(const TensorLayout& layout);                 // (dp, None)
std::string printStrategy(const TensorLayout& layout);                    // (2, 4)
std::optional<std::string> printSbp(const TensorLayout& layout);          // (S(0), B)
std::optional<std::string> printPlacements(const TensorLayout& layout);   // (Shard(0), Replicate())
std::optional<std::string> printDimsMapping(const TensorLayout& layout);  // [0, -1]
// DTensor placements over the device matrix's axes of more than one device (a MindSpore device
// matrix pads the user's mesh with size-1 axes, which DTensor's mesh does not have):
// {"Shard(0)", "Replicate()"}; nullopt where printPlacements has none.
std::optional<std::vector<std::string>> placementsOf(const TensorLayout& layout);
std::string printTensorMapIndex(const TensorLayout& layout);  // [1, -1]; [(1, 0), -1]

// Splits "a,(b,c),None" at top-level commas, trimming blanks and one pair of outer brackets.
std::vector<std::string> splitTopLevel(std::string_view text);
// The same without stripping outer brackets: `(a,b)` is one entry (a dim on several axes).
std::vector<std::string> splitTopLevelKeepingTuples(std::string_view text);

}  // namespace irc
