#!/usr/bin/python3
"""Writes examples/gpt2.onnx: a small GPT-2 shaped the way torch.onnx.export (opset 14) writes
Hugging Face's GPT2LMHeadModel, built node by node with Debian's python3-onnx (no torch needed).

What makes it look like an export, and what irc's ONNX frontend must handle:
  * node names  /transformer/h.0/attn/c_attn/MatMul, tensor names  <node>_output_0,
    initializers  transformer.h.0.attn.c_attn.weight;
  * symbolic input dims  batch  and  sequence  (bound by the plan's `dims`);
  * shape chains  Shape -> Gather -> Unsqueeze -> Concat -> Reshape  for the head reshapes, and
    Range over the sequence length for the position ids (all folded at import);
  * decomposed LayerNorm (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add);
  * Erf-form GeLU  x * 0.5 * (1 + erf(x / sqrt 2));
  * causal attention masked with Where over a Slice of the registered `bias` buffer.

Run:  /usr/bin/python3 examples/make_gpt2_onnx.py [OUT.onnx] [--layers N]
The weights come from a fixed seed, so the file is the same on every run.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCAB, N_EMBD, N_HEAD, N_POSITIONS = 128, 32, 4, 16
HEAD_DIM = N_EMBD // N_HEAD


class Exporter:
    def __init__(self, seed=0):
        self.nodes, self.initializers = [], []
        self.rng = np.random.default_rng(seed)
        self.constants = 0
        self.counts = {}

    def weight(self, name, shape, scale=0.02):
        self.initializers.append(numpy_helper.from_array((self.rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def ones(self, name, shape, value=1.0):
        self.initializers.append(numpy_helper.from_array(np.full(shape, value, dtype=np.float32), name))
        return name

    def const(self, scope, array):
        """A Constant node, as the exporter writes every literal."""
        name = f"{scope}/Constant" + (f"_{self.constants}" if self.constants else "")
        self.constants += 1
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node("Constant", [], [out], name=name, value=numpy_helper.from_array(np.array(array))))
        return out

    def node(self, op, scope, inputs, suffix=None, outputs=1, **attrs):
        """A node named as the exporter names them: <scope>/<Op>, then <Op>_1, <Op>_2, ..."""
        count = self.counts.get((scope, op), 0)
        self.counts[(scope, op)] = count + 1
        name = f"{scope}/{op}" + (f"_{count}" if count else "")
        outs = [f"{name}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs


def layer_norm(e, scope, x, prefix):
    mean = e.node("ReduceMean", scope, [x], axes=[-1])
    centered = e.node("Sub", scope, [x, mean])
    squared = e.node("Pow", scope, [centered, e.const(scope, np.float32(2.0))])
    variance = e.node("ReduceMean", scope, [squared], "_1", axes=[-1])
    shifted = e.node("Add", scope, [variance, e.const(scope, np.float32(1e-5))])
    std = e.node("Sqrt", scope, [shifted])
    normed = e.node("Div", scope, [centered, std])
    scaled = e.node("Mul", scope, [normed, e.ones(f"{prefix}.weight", [N_EMBD])])
    return e.node("Add", scope, [scaled, e.ones(f"{prefix}.bias", [N_EMBD], 0.0)], "_1")


def linear(e, scope, x, prefix, n_in, n_out):
    """Conv1D / nn.Linear on a 3-D input: MatMul then Add, as the exporter writes it."""
    y = e.node("MatMul", scope, [x, e.weight(f"{prefix}.weight", [n_in, n_out])])
    return e.node("Add", scope, [e.ones(f"{prefix}.bias", [n_out], 0.0), y])


def split_heads(e, scope, x, suffix, perm):
    """x.view(B, T, H, D).permute(perm), the view's shape from a Shape -> Gather chain."""
    shape = e.node("Shape", scope, [x], suffix)
    batch = e.node("Gather", scope, [shape, e.const(scope, np.int64(0))], suffix, axis=0)
    seq = e.node("Gather", scope, [shape, e.const(scope, np.int64(1))], f"{suffix}_1", axis=0)
    dims = [e.node("Unsqueeze", scope, [batch, e.const(scope, np.array([0], np.int64))], suffix),
            e.node("Unsqueeze", scope, [seq, e.const(scope, np.array([0], np.int64))], f"{suffix}_1"),
            e.const(scope, np.array([N_HEAD], np.int64)), e.const(scope, np.array([HEAD_DIM], np.int64))]
    target = e.node("Concat", scope, dims, suffix, axis=0)
    viewed = e.node("Reshape", scope, [x, target], suffix)
    return e.node("Transpose", scope, [viewed], suffix, perm=perm)


def attention(e, scope, x, prefix, seq_len):
    qkv = linear(e, f"{scope}/c_attn", x, f"{prefix}.c_attn", N_EMBD, 3 * N_EMBD)
    q, k, v = e.node("Split", scope, [qkv, e.const(scope, np.array([N_EMBD] * 3, np.int64))], outputs=3, axis=2)
    q = split_heads(e, scope, q, "", [0, 2, 1, 3])
    k = split_heads(e, scope, k, "_1", [0, 2, 3, 1])
    v = split_heads(e, scope, v, "_2", [0, 2, 1, 3])
    scores = e.node("MatMul", scope, [q, k])
    scores = e.node("Div", scope, [scores, e.const(scope, np.float32(np.sqrt(HEAD_DIM)))])
    # bias[:, :, key_len - query_len : key_len, :key_len], from the registered causal buffer
    buffer = f"{prefix}.bias"
    if buffer not in [t.name for t in e.initializers]:
        mask = np.tril(np.ones((N_POSITIONS, N_POSITIONS), dtype=bool)).reshape(1, 1, N_POSITIONS, N_POSITIONS)
        e.initializers.append(numpy_helper.from_array(mask, buffer))
    shape = e.node("Shape", scope, [scores], "_3")
    key_len = e.node("Gather", scope, [shape, e.const(scope, np.int64(-1))], "_3", axis=0)
    key_len = e.node("Unsqueeze", scope, [key_len, e.const(scope, np.array([0], np.int64))], "_2")
    rows = e.node("Slice", scope, [buffer, e.const(scope, np.array([0], np.int64)), key_len,
                                   e.const(scope, np.array([2], np.int64)), e.const(scope, np.array([1], np.int64))])
    causal = e.node("Slice", scope, [rows, e.const(scope, np.array([0], np.int64)), key_len,
                                     e.const(scope, np.array([3], np.int64)), e.const(scope, np.array([1], np.int64))], "_1")
    masked = e.node("Where", scope, [causal, scores, e.const(scope, np.float32(np.finfo(np.float32).min))])
    probs = e.node("Softmax", scope, [masked], axis=-1)
    context = e.node("MatMul", scope, [probs, v], "_1")
    context = e.node("Transpose", scope, [context], "_3", perm=[0, 2, 1, 3])
    merged = e.node("Reshape", scope, [context, e.const(scope, np.array([0, 0, N_EMBD], np.int64))], "_3")
    return linear(e, f"{scope}/c_proj", merged, f"{prefix}.c_proj", N_EMBD, N_EMBD)


def mlp(e, scope, x, prefix):
    h = linear(e, f"{scope}/c_fc", x, f"{prefix}.c_fc", N_EMBD, 4 * N_EMBD)
    act = f"{scope}/act"
    erf = e.node("Erf", act, [e.node("Div", act, [h, e.const(act, np.float32(1.4142135381698608))])])
    gelu = e.node("Mul", act, [e.node("Mul", act, [h, e.node("Add", act, [erf, e.const(act, np.float32(1.0))])]),
                               e.const(act, np.float32(0.5))], "_1")
    return linear(e, f"{scope}/c_proj", gelu, f"{prefix}.c_proj", 4 * N_EMBD, N_EMBD)


def build(layers):
    e = Exporter()
    ids = "input_ids"
    tok = e.node("Gather", "/transformer/wte", [e.weight("transformer.wte.weight", [VOCAB, N_EMBD]), ids])
    shape = e.node("Shape", "/transformer", [ids])
    seq = e.node("Gather", "/transformer", [shape, e.const("/transformer", np.int64(-1))], axis=0)
    positions = e.node("Range", "/transformer", [e.const("/transformer", np.int64(0)), seq, e.const("/transformer", np.int64(1))])
    positions = e.node("Unsqueeze", "/transformer", [positions, e.const("/transformer", np.array([0], np.int64))])
    pos = e.node("Gather", "/transformer/wpe", [e.weight("transformer.wpe.weight", [N_POSITIONS, N_EMBD]), positions])
    x = e.node("Add", "/transformer", [tok, pos])
    for i in range(layers):
        scope, prefix = f"/transformer/h.{i}", f"transformer.h.{i}"
        a = attention(e, f"{scope}/attn", layer_norm(e, f"{scope}/ln_1", x, f"{prefix}.ln_1"), f"{prefix}.attn", seq)
        x = e.node("Add", scope, [x, a])
        m = mlp(e, f"{scope}/mlp", layer_norm(e, f"{scope}/ln_2", x, f"{prefix}.ln_2"), f"{prefix}.mlp")
        x = e.node("Add", scope, [x, m], "_1")
    x = layer_norm(e, "/transformer/ln_f", x, "transformer.ln_f")
    logits = e.node("MatMul", "/lm_head", [x, e.weight("lm_head.weight", [N_EMBD, VOCAB])])
    graph = helper.make_graph(
        e.nodes, "torch_jit",
        [helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info(logits, TensorProto.FLOAT, ["batch", "sequence", VOCAB])],
        e.initializers)
    model = helper.make_model(graph, producer_name="pytorch", producer_version="2.1.0",
                              opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    args = sys.argv[1:]
    layers = 2
    if "--layers" in args:
        i = args.index("--layers")
        layers = int(args[i + 1])
        del args[i:i + 2]
    out = args[0] if args else "examples/gpt2.onnx"
    onnx.save(build(layers), out)
    print(f"wrote {out}: {layers} layers")
