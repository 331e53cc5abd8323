// ONNX node -> irc ops, one mapper per ONNX op type (docs/onnx.md has the table), written by op
// family in frontends/onnx/mapping/. Mappers read attributes the way every opset from 13 to 18
// writes them (an `axes` attribute or input), emit irc ops through NodeMapping::emit (which folds
// what has constant inputs), and fold the shape-only ops (Shape, Size, ConstantOfShape, Range, a
// strided Slice of a constant) themselves.
#include <algorithm>

#include "frontends/onnx/mapping/mapping_common.h"

namespace irc::onnx_import {
namespace {

const MapperTable& mappers() {
  static const MapperTable table = [] {
    MapperTable t;
    addElementwiseMappers(t);
    addContractionMappers(t);
    addNormalizationMappers(t);
    addConvolutionMappers(t);
    addDataMovementMappers(t);
    addShapeOpMappers(t);
    return t;
  }();
  return table;
}

}  // namespace

const NodeMapper* findMapper(const std::string& opType) {
  auto it = mappers().find(opType);
  return it == mappers().end() ? nullptr : &it->second;
}

}  // namespace irc::onnx_import

namespace irc {

const std::vector<std::string>& supportedOnnxOps() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, _] : onnx_import::mappers()) out.push_back(name);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return names;
}

}  // namespace irc
