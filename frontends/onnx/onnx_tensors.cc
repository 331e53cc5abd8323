#include "frontends/onnx/onnx_tensors.h"

#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace irc {
namespace {

using onnx::TensorProto;

// IEEE half and bfloat16 bits to float (ONNX stores both as uint16 in int32_data or raw bytes).
double halfToDouble(uint16_t h) {
  int sign = h >> 15, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  double magnitude;
  if (exponent == 0) magnitude = std::ldexp(mantissa, -24);
  else if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
  else magnitude = std::ldexp(mantissa + 1024, exponent - 25);
  return sign ? -magnitude : magnitude;
}

double bfloat16ToDouble(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <typename T>
void readRaw(const std::string& raw, std::vector<double>& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));  // ONNX raw data is little-endian, as this machine
    out[i] = static_cast<double>(v);
  }
}

}  // namespace

std::optional<DType> dtypeOfOnnx(int32_t elemType) {
  switch (elemType) {
    case TensorProto::FLOAT: return DType::Float32;
    case TensorProto::FLOAT16: return DType::Float16;
    case TensorProto::BFLOAT16: return DType::BFloat16;
    case TensorProto::DOUBLE: return DType::Float64;
    case TensorProto::INT32: return DType::Int32;
    case TensorProto::INT64: return DType::Int64;
    case TensorProto::INT8: return DType::Int8;
    case TensorProto::UINT8: return DType::UInt8;
    case TensorProto::BOOL: return DType::Bool;
    default: return std::nullopt;
  }
}

std::string onnxTypeName(int32_t elemType) {
  if (TensorProto::DataType_IsValid(elemType)) return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elemType));
  return fmt::format("element type {}", elemType);
}

std::optional<TensorType> typeOfTensor(const TensorProto& tensor, std::string& error) {
  auto dtype = dtypeOfOnnx(tensor.data_type());
  if (!dtype) {
    error = fmt::format(
        "tensor '{}' has element type {}, which irc does not hold (it holds float, float16, bfloat16, "
        "double, int8, uint8, int32, int64, bool)",
        tensor.name(), onnxTypeName(tensor.data_type()));
    return std::nullopt;
  }
  TensorType type{*dtype, {}};
  for (int64_t d : tensor.dims()) {
    if (d < 0) {
      error = fmt::format("tensor '{}' has a negative dimension {}", tensor.name(), d);
      return std::nullopt;
    }
    type.shape.push_back(d);
  }
  return type;
}

std::string externalLocation(const TensorProto& tensor) {
  if (tensor.data_location() != TensorProto::EXTERNAL) return "";
  for (const auto& entry : tensor.external_data())
    if (entry.key() == "location") return entry.value();
  return "";
}

namespace {

// Reads `length` bytes at `offset` of the tensor's external file (ONNX's external data: keys
// location, offset, length; the location relative to the model's folder and inside it).
std::optional<std::string> readExternal(const TensorProto& tensor, const ExternalDataSource* external, size_t expected,
                                        std::string& error, TensorDataProblem& problem) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : tensor.external_data()) {
    const std::string& key = entry.key();
    if (key == "location") {
      location = entry.value();
    } else if (key == "offset" || key == "length") {
      char* end = nullptr;
      long long v = std::strtoll(entry.value().c_str(), &end, 10);
      if (entry.value().empty() || *end != '\0' || v < 0) {
        error = fmt::format("tensor '{}' has external data {} '{}'; it must be a number >= 0", tensor.name(), key, entry.value());
        problem = TensorDataProblem::Malformed;
        return std::nullopt;
      }
      (key == "offset" ? offset : length) = v;
    }
  }
  problem = TensorDataProblem::Malformed;
  if (location.empty()) {
    error = fmt::format("tensor '{}' keeps its data in an external file but names none (no 'location' entry)", tensor.name());
    return std::nullopt;
  }
  // ONNX's rule: the file lies in the model's folder or below it.
  if (location.front() == '/' || location.find("..") != std::string::npos) {
    error = fmt::format("tensor '{}' names the external file '{}'; it must be a path inside the model's folder", tensor.name(),
                        location);
    return std::nullopt;
  }
  if (length >= 0 && static_cast<size_t>(length) != expected) {
    error =
        fmt::format("tensor '{}' has external data length {}; its shape and type need {} bytes", tensor.name(), length, expected);
    return std::nullopt;
  }
  std::string path = (external && !external->dir.empty() ? external->dir + "/" : std::string()) + location;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("tensor '{}' keeps its data in the external file '{}', which is not there", tensor.name(), path);
    problem = TensorDataProblem::ExternalFileMissing;
    return std::nullopt;
  }
  std::string raw(expected, '\0');
  in.seekg(offset);
  in.read(raw.data(), static_cast<std::streamsize>(expected));
  if (!in || static_cast<size_t>(in.gcount()) != expected) {
    error = fmt::format("tensor '{}': the external file '{}' ends before bytes {} .. {}", tensor.name(), path, offset,
                        offset + static_cast<int64_t>(expected));
    return std::nullopt;
  }
  problem = TensorDataProblem::None;
  return raw;
}

size_t elementWidth(int32_t elem) {
  return elem == TensorProto::DOUBLE || elem == TensorProto::INT64       ? 8
         : elem == TensorProto::FLOAT || elem == TensorProto::INT32      ? 4
         : elem == TensorProto::FLOAT16 || elem == TensorProto::BFLOAT16 ? 2
                                                                         : 1;
}

}  // namespace

std::optional<TensorValue> valueOfTensor(const TensorProto& tensor, std::string& error, const ExternalDataSource* external,
                                         TensorDataProblem* problemOut) {
  TensorDataProblem ignored;
  TensorDataProblem& problem = problemOut ? *problemOut : ignored;
  problem = TensorDataProblem::Malformed;
  auto type = typeOfTensor(tensor, error);
  if (!type) return std::nullopt;
  int64_t count = 1;
  for (int64_t d : type->shape) {
    if (d > 0 && count > (int64_t{1} << 40) / d) {
      error = fmt::format("tensor '{}' is too large", tensor.name());
      return std::nullopt;
    }
    count *= d;
  }
  const int32_t elem = tensor.data_type();
  std::optional<std::string> externalBytes;
  if (tensor.data_location() == TensorProto::EXTERNAL) {
    externalBytes = readExternal(tensor, external, static_cast<size_t>(count) * elementWidth(elem), error, problem);
    if (!externalBytes) return std::nullopt;
  }
  problem = TensorDataProblem::Malformed;
  TensorValue value{type->shape, {}};
  if (externalBytes || tensor.has_raw_data()) {
    const std::string& raw = externalBytes ? *externalBytes : tensor.raw_data();
    size_t width = elementWidth(elem);
    if (raw.size() != static_cast<size_t>(count) * width) {
      error = fmt::format("tensor '{}' holds {} bytes of data; its shape and type need {}", tensor.name(), raw.size(),
                          static_cast<size_t>(count) * width);
      return std::nullopt;
    }
    value.data.resize(count);
    switch (elem) {
      case TensorProto::FLOAT: readRaw<float>(raw, value.data); break;
      case TensorProto::DOUBLE: readRaw<double>(raw, value.data); break;
      case TensorProto::INT32: readRaw<int32_t>(raw, value.data); break;
      case TensorProto::INT64: readRaw<int64_t>(raw, value.data); break;
      case TensorProto::INT8: readRaw<int8_t>(raw, value.data); break;
      case TensorProto::UINT8:
      case TensorProto::BOOL: readRaw<uint8_t>(raw, value.data); break;
      case TensorProto::FLOAT16:
      case TensorProto::BFLOAT16: {
        std::vector<double> bits(count);
        readRaw<uint16_t>(raw, bits);
        for (int64_t i = 0; i < count; ++i) {
          auto b = static_cast<uint16_t>(bits[i]);
          value.data[i] = elem == TensorProto::FLOAT16 ? halfToDouble(b) : bfloat16ToDouble(b);
        }
        break;
      }
    }
    problem = TensorDataProblem::None;
    return value;
  }
  // The typed fields: float_data, double_data, int64_data, and int32_data for every narrower type.
  auto take = [&](const auto& field, auto convert) -> bool {
    if (field.size() != count) {
      error = fmt::format("tensor '{}' holds {} elements; its shape needs {}", tensor.name(), field.size(), count);
      return false;
    }
    value.data.reserve(count);
    for (auto v : field) value.data.push_back(convert(v));
    return true;
  };
  auto plain = [](auto v) { return static_cast<double>(v); };
  bool ok = false;
  switch (elem) {
    case TensorProto::FLOAT: ok = take(tensor.float_data(), plain); break;
    case TensorProto::DOUBLE: ok = take(tensor.double_data(), plain); break;
    case TensorProto::INT64: ok = take(tensor.int64_data(), plain); break;
    case TensorProto::FLOAT16:
      ok = take(tensor.int32_data(), [](int32_t v) { return halfToDouble(static_cast<uint16_t>(v)); });
      break;
    case TensorProto::BFLOAT16:
      ok = take(tensor.int32_data(), [](int32_t v) { return bfloat16ToDouble(static_cast<uint16_t>(v)); });
      break;
    default: ok = take(tensor.int32_data(), plain); break;
  }
  if (!ok) return std::nullopt;
  problem = TensorDataProblem::None;
  return value;
}

}  // namespace irc
