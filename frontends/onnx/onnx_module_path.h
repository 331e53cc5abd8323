#pragma once
// The torch module an exported node belongs to ("m.model.layers.0.self_attn.q_proj"): from the
// node metadata the dynamo exporter writes (IR 10: NodeProto.metadata_props, field 9, which
// Debian's libonnx 1.12 predates and protobuf keeps as an unknown field), or from a TorchScript
// export's node name ("/m/model/layers.0/self_attn/q_proj/MatMul").
#include <string>

#include <onnx/onnx_pb.h>

namespace irc {

// The node's module path ("" when it names none); `error` is set when its metadata is malformed.
std::string modulePathOf(const onnx::NodeProto& node, std::string& error);

}  // namespace irc
