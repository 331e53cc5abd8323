#pragma once
// A memo key made of integers (every list in it preceded by its length), and its hash. The
// propagation passes memoize per-op answers under such keys: the layers of a model repeat, so
// most ops ask what an op of an earlier layer already asked. (Built as text, keys cost a tenth of
// a large compile.)
#include <cstdint>
#include <vector>

#include "ir/tensor_layout.h"

namespace irc {

using IntKey = std::vector<int64_t>;

struct IntKeyHash {
  size_t operator()(const IntKey& key) const {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a over the integers
    for (int64_t x : key) h = (h ^ static_cast<uint64_t>(x)) * 1099511628211ULL;
    return static_cast<size_t>(h);
  }
};

// Appends a list: its length, then its elements.
template <typename List>
void appendList(IntKey& key, const List& list) {
  key.push_back(static_cast<int64_t>(list.size()));
  for (auto x : list) key.push_back(static_cast<int64_t>(x));
}

// A layout in standard form (the same data, the same key).
inline void appendLayoutKey(IntKey& key, const TensorLayout& l) {
  TensorLayout s = l.standardForm();
  appendList(key, s.mesh.dims);
  appendList(key, s.shape);
  for (const auto& axes : s.dims) appendList(key, axes);
  appendList(key, s.partialAxes);
}

}  // namespace irc
