#pragma once
// numpy's .npz files (a zip of .npy arrays, what numpy.savez writes and onnxruntime users keep
// inputs and outputs in) as float64 TensorValues, read with libzip (Debian's libzip-dev). Used by
// `irc verify --inputs / --expect`.
#include <map>
#include <optional>
#include <string>

#include "ir/dtype.h"
#include "ir/tensor_value.h"

namespace irc {

struct NpyArray {
  DType dtype = DType::Float32;
  TensorValue value;  // shape and elements (row-major)
};

// The arrays of an .npz file by name (the entry name without `.npy`), or nullopt with `error`
// saying what is wrong and where ("FILE: array 'x': ...").
std::optional<std::map<std::string, NpyArray>> readNpz(const std::string& path, std::string& error);

// One .npy file's bytes as an array, or nullopt with `error` (the format's problems, unsupported
// dtypes, big-endian or Fortran-ordered data, a size that does not match the shape).
std::optional<NpyArray> parseNpy(const std::string& bytes, std::string& error);

}  // namespace irc
