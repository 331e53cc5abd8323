#include "frontends/onnx_tensors.h"

#include <cstring>

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
    error = fmt::format("tensor '{}' has element type {}, which irc does not hold (it holds float, float16, bfloat16, "
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

std::optional<TensorValue> valueOfTensor(const TensorProto& tensor, std::string& error) {
  auto type = typeOfTensor(tensor, error);
  if (!type) return std::nullopt;
  if (tensor.data_location() == TensorProto::EXTERNAL) {
    error = fmt::format("tensor '{}' keeps its data in an external file; irc reads self-contained models (save with "
                        "save_as_external_data=False)",
                        tensor.name());
    return std::nullopt;
  }
  int64_t count = 1;
  for (int64_t d : type->shape) {
    if (d > 0 && count > (int64_t{1} << 40) / d) {
      error = fmt::format("tensor '{}' is too large", tensor.name());
      return std::nullopt;
    }
    count *= d;
  }
  TensorValue value{type->shape, {}};
  const int32_t elem = tensor.data_type();
  if (tensor.has_raw_data()) {
    const std::string& raw = tensor.raw_data();
    size_t width = elem == TensorProto::DOUBLE || elem == TensorProto::INT64   ? 8
                   : elem == TensorProto::FLOAT || elem == TensorProto::INT32  ? 4
                   : elem == TensorProto::FLOAT16 || elem == TensorProto::BFLOAT16 ? 2
                                                                                   : 1;
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
    case TensorProto::FLOAT16: ok = take(tensor.int32_data(), [](int32_t v) { return halfToDouble(static_cast<uint16_t>(v)); }); break;
    case TensorProto::BFLOAT16:
      ok = take(tensor.int32_data(), [](int32_t v) { return bfloat16ToDouble(static_cast<uint16_t>(v)); });
      break;
    default: ok = take(tensor.int32_data(), plain); break;
  }
  if (!ok) return std::nullopt;
  return value;
}

}  // namespace irc
