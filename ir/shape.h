#pragma once
// Tensor shapes and their MindSpore text form: `(64, 64)`, `(4)`, `()`.
#include <cstdint>
#include <string>
#include <vector>

namespace irc {

using Shape = std::vector<int64_t>;

int64_t numElements(const Shape& shape);
std::string formatShape(const Shape& shape);                     // (64, 64); (4); ()
std::string formatIntTuple(const std::vector<int64_t>& values);  // same form, for tuples of ints
std::string formatIntList(const std::vector<int64_t>& values);   // [64, 64]

}  // namespace irc
