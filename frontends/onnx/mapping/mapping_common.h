#pragma once
// What every ONNX op mapper shares (frontends/onnx/onnx_op_mapping.cc builds the table from the
// families' files in this folder): the term helpers, and each family's registration.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "frontends/onnx/onnx_graph_builder.h"
#include "frontends/onnx/onnx_tensors.h"
#include "ir/limits.h"
#include "ops/shape_inference.h"

namespace irc::onnx_import {

using MapperTable = std::unordered_map<std::string, NodeMapper>;

using Terms = std::optional<std::vector<Term>>;

inline Terms one(std::optional<Term> t) {
  if (!t) return std::nullopt;
  return std::vector<Term>{*t};
}

inline std::optional<Term> need(NodeMapping& m, size_t i) {
  auto t = m.input(i);
  if (!t) m.error(fmt::format("needs input {}", i));
  return t;
}

inline Shape shapeOf(NodeMapping& m, const Term& t) { return m.typeOf(t).shape; }

inline IntTuple toInts(const TensorValue& v) {
  IntTuple out;
  for (double d : v.data) out.push_back(static_cast<int64_t>(d));
  return out;
}

inline TensorValue intVector(const IntTuple& values) {
  TensorValue v{{static_cast<int64_t>(values.size())}, {}};
  for (int64_t x : values) v.data.push_back(static_cast<double>(x));
  return v;
}

// A constant term in another dtype (ONNX's Pow takes an int exponent for a float base; irc's
// binary ops want one dtype).
inline std::optional<Term> withDType(NodeMapping& m, const Term& t, DType dtype) {
  if (m.typeOf(t).dtype == dtype || !t.isConstant()) return t;
  const TensorValue* data = m.dataOf(t);
  if (!data) return std::nullopt;
  TensorValue converted = *data;
  if (isInteger(dtype))
    for (double& v : converted.data) v = std::trunc(v);
  return m.constant({dtype, m.typeOf(t).shape}, converted, "cast");
}

// The `axes` of a reduction, Squeeze or Unsqueeze: an attribute before opset 13 (18 for the
// reductions but ReduceSum), an optional input after.
inline std::optional<IntTuple> axesOf(NodeMapping& m, size_t inputIndex, bool& given) {
  if (auto a = m.intsAttr("axes")) {
    given = true;
    return *a;
  }
  if (m.input(inputIndex)) {
    given = true;
    auto v = m.constantInput(inputIndex, "axes");
    if (!v) return std::nullopt;
    return toInts(*v);
  }
  given = false;
  return IntTuple{};
}

// The reductions' irc types, which the reduction and global-pooling mappers both emit.
inline constexpr char kReduceMean[] = "ReduceMean", kReduceSum[] = "ReduceSum", kReduceMax[] = "ReduceMax",
                      kReduceMin[] = "ReduceMin";

// Each family adds its mappers to the table.
void addElementwiseMappers(MapperTable& table);
void addContractionMappers(MapperTable& table);
void addNormalizationMappers(MapperTable& table);
void addConvolutionMappers(MapperTable& table);
void addDataMovementMappers(MapperTable& table);
void addShapeOpMappers(MapperTable& table);

}  // namespace irc::onnx_import
