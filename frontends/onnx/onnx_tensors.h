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

// Where a model's external data files are (the model's folder), for initializers stored outside
// the .onnx file (`data_location: EXTERNAL`, how every model over 2 GB is shipped).
struct ExternalDataSource {
  std::string dir;
};

// Why a tensor's data could not be read.
enum class TensorDataProblem { None, Malformed, ExternalFileMissing };

// The tensor's elements as doubles (raw_data, the typed fields, or its range of an external data
// file below `external.dir`), or nullopt with `error` set (a size that does not match the shape,
// an element type irc does not hold, an external file that is not there or too short, a location
// outside the model's folder). `problem` says which.
std::optional<TensorValue> valueOfTensor(const onnx::TensorProto& tensor, std::string& error,
                                         const ExternalDataSource* external = nullptr, TensorDataProblem* problem = nullptr);
// The external data file a tensor names ("" when its data is inside the model).
std::string externalLocation(const onnx::TensorProto& tensor);

}  // namespace irc
