#pragma once
// What `irc layout` shows of one tensor layout: every notation, the slice shape, per rank its
// coordinate, shard number, slice and replica group, and a picture of the mesh.
#include <string>

#include <nlohmann/json.hpp>

#include "ir/tensor_layout.h"

namespace irc {

// spec/cli.md's JSON form (keys in that order).
nlohmann::ordered_json layoutJson(const TensorLayout& layout);
// The text form; `color` paints the mesh picture's blocks (terminals only).
std::string layoutText(const TensorLayout& layout, bool color);
// The mesh picture alone: one cell per rank with its shard number; a 2-D grid over the last two
// axes, one grid per coordinate of the leading axes.
std::string meshPicture(const TensorLayout& layout, bool color);

}  // namespace irc
