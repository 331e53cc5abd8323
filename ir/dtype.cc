#include "ir/dtype.h"

#include <array>

namespace irc {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view model;
  std::string_view dump;
  int bytes;
};

constexpr std::array<DTypeInfo, 9> kDTypes = {{
    {DType::Float32, "float32", "Float32", 4},
    {DType::Float16, "float16", "Float16", 2},
    {DType::BFloat16, "bfloat16", "BFloat16", 2},
    {DType::Float64, "float64", "Float64", 8},
    {DType::Int32, "int32", "Int32", 4},
    {DType::Int64, "int64", "Int64", 8},
    {DType::Int8, "int8", "Int8", 1},
    {DType::UInt8, "uint8", "UInt8", 1},
    {DType::Bool, "bool", "Bool", 1},
}};

const DTypeInfo& info(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

}  // namespace

std::optional<DType> parseDType(std::string_view modelSpelling) {
  for (const auto& d : kDTypes)
    if (d.model == modelSpelling) return d.dtype;
  return std::nullopt;
}

std::optional<DType> parseDumpDType(std::string_view dumpSpelling) {
  for (const auto& d : kDTypes)
    if (d.dump == dumpSpelling) return d.dtype;
  return std::nullopt;
}

std::string_view modelName(DType dtype) { return info(dtype).model; }
std::string_view dumpName(DType dtype) { return info(dtype).dump; }
int byteSize(DType dtype) { return info(dtype).bytes; }

bool isFloat(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::Float64;
}

bool isInteger(DType dtype) {
  return dtype == DType::Int32 || dtype == DType::Int64 || dtype == DType::Int8 || dtype == DType::UInt8;
}

const std::vector<std::string>& allDTypeModelNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& d : kDTypes) out.emplace_back(d.model);
    return out;
  }();
  return names;
}

}  // namespace irc
