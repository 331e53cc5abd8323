#pragma once
// Which of an ONNX export's constants torch trains. An export holds torch's parameters and its
// buffers (rotary frequencies, BatchNorm statistics) as initializers, and the exporter or the
// import folds more (causal masks, rotary cos/sin tables, scalars) — all of them tensors irc
// holds, only the parameters take gradients and optimizer states. Exporters keep a parameter's
// module path as its name unless they folded an op into it (a Linear weight's transpose becomes
// `val_93` or `onnx::MatMul_323`); such a renamed constant is still a parameter where it is read
// as a module's weight (ops/: OpFamilyRules::operandIsWeight).
#include "ir/graph.h"

namespace irc::onnx_import {

// Sets Value::trainable of every parameter: a module path (`m.layers.0.mlp.fc1.weight`) trains
// unless it names one of torch's buffers; an exporter's or the import's name trains only where
// a reader takes it as a weight. Returns how many parameters are held but not trained.
int markUntrainedConstants(Graph& graph);

}  // namespace irc::onnx_import
