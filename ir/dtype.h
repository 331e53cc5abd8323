#pragma once
// Element types of tensors. The model spells them `float32`, the dump `Float32`.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace irc {

enum class DType { Float32, Float16, BFloat16, Float64, Int32, Int64, Int8, UInt8, Bool };

std::optional<DType> parseDType(std::string_view modelSpelling);
std::optional<DType> parseDumpDType(std::string_view dumpSpelling);  // dumpName's inverse
std::string_view modelName(DType dtype);                             // "float32"
std::string_view dumpName(DType dtype);                              // "Float32"
int byteSize(DType dtype);
bool isFloat(DType dtype);
bool isInteger(DType dtype);  // signed or unsigned integers, not Bool
const std::vector<std::string>& allDTypeModelNames();

}  // namespace irc
