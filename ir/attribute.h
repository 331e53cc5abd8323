#pragma once
// Typed attribute and constant-operand values. Ops keep their attributes in a sorted map so
// that every dump lists them in the same order.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "ir/dtype.h"

namespace irc {

// A 0-d tensor constant: a one-hot's on and off values, the RealDiv divisor, Gather's offsets.
struct ScalarTensor {
  DType dtype = DType::Float32;
  double value = 0;
  bool operator==(const ScalarTensor&) const = default;
};

using IntTuple = std::vector<int64_t>;

using Attribute = std::variant<bool, int64_t, double, std::string, IntTuple, DType, ScalarTensor>;
using AttrMap = std::map<std::string, Attribute>;

// The value as MindSpore prints it: `false`, `-1`, `1e-07`, `sum`, `(0, 0)`, `Float16`,
// `Tensor(shape=[], dtype=Float32, value=4)`.
std::string formatAttribute(const Attribute& attr);
// The type of a constant operand: `<Int64>`, `<Bool>`, `<Tuple[Int64*2]>`, `<TypeType>`, ...
std::string formatConstantType(const Attribute& attr);
// The same texts appended to `out` (the .ir printer writes one per constant operand and attr).
void appendAttribute(std::string& out, const Attribute& attr);
void appendConstantType(std::string& out, const Attribute& attr);
// Number formatting shared by attributes and scalar tensors: integral values print without
// a fraction (`4`), others with the shortest round-trip form (`1e-07`, `0.5`).
std::string formatNumber(double value);

}  // namespace irc
