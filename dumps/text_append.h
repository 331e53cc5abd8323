#pragma once
// Appending the pieces of IR text (ints, tuples, tensor types, strategies, tensor maps) straight
// onto a string. The .ir printer writes hundreds of megabytes on a 100k-op model; building each
// piece as its own std::string first made allocation the larger part of its time.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ir/graph.h"
#include "ir/int_text.h"

namespace irc::text {

// Literals appended with their length known at compile time (no strlen per append: the
// printer appends over a million of them on a 300-layer model).
using namespace std::string_view_literals;

// <Tensor[Float32], (64, 64)>
inline void appendTensorType(std::string& out, const TensorType& type) {
  out += "<Tensor["sv;
  out += dumpName(type.dtype);
  out += "], "sv;
  appendTuple(out, type.shape);
  out += '>';
}

// <Tuple[Tensor[Float32]*2,Tensor[Int32]], TupleShape((8, 16), (8, 1), (4))>: runs of equal
// element types merge.
inline void appendTupleType(std::string& out, const std::vector<TensorType>& types) {
  out += "<Tuple["sv;
  for (size_t i = 0; i < types.size();) {
    size_t j = i;
    while (j < types.size() && types[j].dtype == types[i].dtype) ++j;
    if (i) out += ',';
    out += "Tensor["sv;
    out += dumpName(types[i].dtype);
    out += ']';
    if (j - i > 1) {
      out += '*';
      appendInt(out, static_cast<int64_t>(j - i));
    }
    i = j;
  }
  out += "], TupleShape("sv;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i) out += ", "sv;
    appendTuple(out, types[i].shape);
  }
  out += ")>"sv;
}

// ((2, 1), (1, 4))
inline void appendStrategy(std::string& out, const ShardStrategy& strategy) {
  out += '(';
  for (size_t i = 0; i < strategy.size(); ++i) {
    if (i) out += ", "sv;
    appendTuple(out, strategy[i]);
  }
  out += ')';
}

// MindSpore's tensor map of one layout: per dim -1, the axis counted from the right, or a tuple
// of such axes (major first) when several axes split the dim.
inline void appendTensorMap(std::string& out, const TensorLayout& layout) {
  const int right = layout.mesh.rank() - 1;
  out += '(';
  for (size_t d = 0; d < layout.dims.size(); ++d) {
    if (d) out += ", "sv;
    const auto& axes = layout.dims[d];
    if (axes.empty()) {
      out += "-1"sv;
    } else if (axes.size() == 1) {
      appendInt(out, right - axes[0]);
    } else {
      out += '(';
      for (size_t i = 0; i < axes.size(); ++i) {
        if (i) out += ", "sv;
        appendInt(out, right - axes[i]);
      }
      out += ')';
    }
  }
  out += ')';
}

}  // namespace irc::text
