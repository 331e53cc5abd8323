#pragma once
// ONNX tensors as irc sees them: element types as DTypes, TensorProtos (initializers, Constant
// nodes' values, the node tests' .pb files) as float64 TensorValues.
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/tensor_value.h"

namespace irc {

// The DType of an ONNX TensorProto::DataType, or nullopt (strings, complex, unsigned 16-64 bits).
std::optional<DType> dtypeOfOnnx(int32_t elemType);
std::string onnxTypeName(int32_t elemType);  // "FLOAT", "STRING", ... for messages

// The tensor's type, or an error message.
std::optional<TensorType> typeOfTensor(const onnx::TensorProto& tensor, std::string& error);

// The tensor's elements as doubles (raw_data or the typed fields), or nullopt with `error` set
// (external data, a size that does not match the shape, an element type irc does not hold).
std::optional<TensorValue> valueOfTensor(const onnx::TensorProto& tensor, std::string& error);

}  // namespace irc
