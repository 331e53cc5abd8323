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

// <Tensor[Float32], (64, 64)>
inline void appendTensorType(std::string& out, const TensorType& type) {
  out += "<Tensor[";
  out += dumpName(type.dtype);
  out += "], ";
  appendTuple(out, type.shape);
  out += '>';
}

// <Tuple[Tensor[Float32]*2,Tensor[Int32]], TupleShape((8, 16), (8, 1), (4))>: runs of equal
// element types merge.
inline void appendTupleType(std::string& out, const std::vector<TensorType>& types) {
  out += "<Tuple[";
  for (size_t i = 0; i < types.size();) {
    size_t j = i;
    while (j < types.size() && types[j].dtype == types[i].dtype) ++j;
    if (i) out += ',';
    out += "Tensor[";
    out += dumpName(types[i].dtype);
    out += ']';
    if (j - i > 1) {
      out += '*';
      appendInt(out, static_cast<int64_t>(j - i));
    }
    i = j;
  }
  out += "], TupleShape(";
  for (size_t i = 0; i < types.size(); ++i) {
    if (i) out += ", ";
    appendTuple(out, types[i].shape);
  }
  out += ")>";
}

// ((2, 1), (1, 4))
inline void appendStrategy(std::string& out, const ShardStrategy& strategy) {
  out += '(';
  for (size_t i = 0; i < strategy.size(); ++i) {
    if (i) out += ", ";
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
    if (d) out += ", ";
    const auto& axes = layout.dims[d];
    if (axes.empty()) {
      out += "-1";
    } else if (axes.size() == 1) {
      appendInt(out, right - axes[0]);
    } else {
      out += '(';
      for (size_t i = 0; i < axes.size(); ++i) {
        if (i) out += ", ";
        appendInt(out, right - axes[i]);
      }
      out += ')';
    }
  }
  out += ')';
}

}  // namespace irc::text
