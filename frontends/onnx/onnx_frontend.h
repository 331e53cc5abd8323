#pragma once
// An ONNX file (docs/onnx.md) -> Graph. Nodes are mapped onto irc's op set (a node may become a
// few ops: Gemm is MatMul, Mul and Add), subgraphs whose inputs are all constants (shape
// chains, mask buffers) are folded with irc's reference interpreter, and the initializers that
// computed ops read become parameters. Problems are diagnostics located at a node
// (`FILE:node N: error: ...`); returns nullopt when the file was rejected.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/graph.h"
#include "frontends/loaded_graph.h"
#include "ir/tensor_value.h"

namespace irc {

struct OnnxOptions {
  std::string defaultName;              // the graph's name (the file's stem), over the name the exporter wrote
  std::map<std::string, int64_t> dims;  // `--dim NAME=VALUE`: values of symbolic input dims
  bool keepParameterData = false;       // fill LoadedGraph::parameterData (verify --inputs, the node-test runner)
  // Run ONNX's own shape inference and report every tensor whose shape irc computes differently
  // (a check of the mapping; `--onnx-shape-check`).
  bool checkShapesWithOnnx = false;
  // Keep a node irc does not map as an Opaque op (its result type from ONNX's shape inference)
  // instead of rejecting the file (`--opaque-unsupported`).
  bool opaqueUnsupported = false;
  // Graph inputs given values at import: they become constants (folded like initializers). The
  // node-test runner binds the shape, axes and starts inputs ONNX's tests pass as inputs.
  std::map<std::string, TensorValue> constantInputs;
  // Where to keep each graph output that folded to a constant instead of rejecting the file
  // (null: reject): the node-test runner checks folding on ONNX's tests this way.
  std::map<std::string, TensorValue>* constantOutputs = nullptr;
  // The folder external data files are named relative to (the model's); without the files the
  // model loads with shapes only: external initializers are parameters of their declared shape,
  // and an op that would fold over their numbers stays computed, with a warning.
  std::string externalDataDir;
};

std::optional<LoadedGraph> loadOnnxModel(const std::string& bytes, DiagnosticEngine& diags, const OnnxOptions& options);

// The ONNX op types the frontend maps (for the "supported" list of an error and docs).
const std::vector<std::string>& supportedOnnxOps();

// True when the bytes look like an ONNX file rather than YAML text (a protobuf's first field).
bool looksLikeOnnx(const std::string& bytes);

// An ONNX graph without a plan has no parallel block: data parallel over `deviceNum` devices
// (--device-num; docs/onnx.md). The compile's settings, never written into the model.
ParallelSettings onnxDefaultSettings(int64_t deviceNum);

}  // namespace irc
