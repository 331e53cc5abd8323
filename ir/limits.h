#pragma once
// The documented bounds on what a model may ask for (docs/limits.md), and overflow-checked
// arithmetic on user numbers. Every product of numbers a user wrote (shapes, strategies,
// device matrices, reshape targets) goes through checkedMul, so nothing downstream wraps
// around int64; the bounds keep every derived size (bytes, groups, inserted nodes) in range.
#include <cstdint>
#include <optional>
#include <vector>

namespace irc {

// Elements of one tensor: 2^56, so that a byte count (at most 8 bytes an element) and the ring
// model's factor of 2 stay far inside int64.
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 56;
// Devices: MindSpore numbers ranks with 32-bit integers.
inline constexpr int64_t kMaxDeviceNum = (int64_t{1} << 31) - 1;
// Results of one op (Split's output_num): each is a node in every dump.
inline constexpr int64_t kMaxOpResults = 4096;
// Nodes the redistribution pass may insert in one compile (AllGathers on dim != 0 add a Split
// with one TupleGetItem per group member, per edge).
inline constexpr int64_t kMaxInsertedNodes = 1'000'000;
// Ranks whose folders one run writes (`--all-ranks`) unless `--max-ranks` raises it, and rows
// in `irc layout`'s table.
inline constexpr int64_t kDefaultMaxRanks = 4096;
// Elements an ONNX node's folded result may hold: a fold materializes every element (in float64),
// and one whose size grows with a dim's value (a class token expanded to the batch) would make
// loading scale with that value. Past it the node stays a computed op, as without its numbers.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 24;
// Bytes of a model file read at most (a device or a huge file is refused, not slurped).
inline constexpr int64_t kMaxModelBytes = int64_t{1} << 28;

// a * b, or nullopt where it does not fit int64.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<int64_t> checkedProduct(const std::vector<int64_t>& values) {
  int64_t out = 1;
  for (int64_t v : values) {
    auto next = checkedMul(out, v);
    if (!next) return std::nullopt;
    out = *next;
  }
  return out;
}

// True when the shape's element count fits kMaxTensorElements (checked, no wrap-around).
inline bool withinElementLimit(const std::vector<int64_t>& shape) {
  auto n = checkedProduct(shape);
  return n && *n <= kMaxTensorElements;
}

}  // namespace irc
