#!/usr/bin/env python3
# What torch holds for a model, on the CPU, to compare irc's memory estimate with (docs/memory.md,
# "Other families"): parameters; the inference peak (live bytes of every storage an op makes,
# tracked through torch's dispatcher until its last tensor dies, parameters added); the saved
# activations (what the forward and the loss add and keep, the logits excluded, as
# memory_measured.json counts them); and the peak of one AdamW step. Writes the model's
# torch.onnx.export beside, for `irc memory EXPORT --training` (and tp2_plan.yaml for the TP case).
#
#   /usr/bin/python3 tools/memory_check/measure.py OUT_DIR [llama|llama_tp2|bert|vit|gpt2_mid ...]
#
# Needs torch (Debian: apt-get install python3-torch); CI does not run it. Torch 1.13's `mean`
# keeps its input for backward where torch 2 keeps its shape: subtract one [batch, seq, hidden]
# float32 tensor per RMSNorm from Llama's saved activations and training peak.
import json, os, sys, weakref

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eager_models  # noqa: E402


class Live(TorchDispatchMode):
    """Live bytes of the storages ops make (not those of `external` ones: parameters, inputs)."""

    def __init__(self, external=()):
        super().__init__()
        self.refs, self.cur, self.peak, self.external = {}, 0, 0, set(external)

    def _release(self, ptr):
        entry = self.refs.get(ptr)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            self.cur -= entry[0]
            del self.refs[ptr]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.storage()
            ptr = storage.data_ptr()
            if ptr == 0 or ptr in self.external:
                continue
            if ptr in self.refs:
                self.refs[ptr][1] += 1
            else:
                self.refs[ptr] = [storage.nbytes(), 1]
                self.cur += storage.nbytes()
                self.peak = max(self.peak, self.cur)
            weakref.finalize(t, self._release, ptr)
        return out


def measure(model, x, labels):
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    external = {p.storage().data_ptr() for p in model.parameters()} | {x.storage().data_ptr()}
    model.eval()
    with torch.no_grad():
        live = Live(external)
        with live:
            del_me = model(x)
            del del_me
        inference_peak = params + live.peak
    model.train()
    live = Live(external)
    with live:
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        saved = live.cur - logits.numel() * logits.element_size()
        loss.backward()
        del loss, logits
        torch.optim.AdamW(model.parameters(), lr=1e-3).step()
    return {"parameters": params, "inference_peak": inference_peak, "saved_activations": saved,
            "training_peak": params + live.peak}


class AllReduced(nn.Module):
    """A row-parallel Linear's output all-reduced into a new tensor (DTensor's functional all_reduce)."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x).clone()


def llama_tp_rank(model, tp=2):
    """Rank 0's shard of Megatron TP: q/k/v/gate/up colwise (its heads, its MLP slice), o/down rowwise."""
    for layer in model.layers:
        a, p = layer.self_attn, layer.mlp
        h, d = a.q_proj.in_features, a.d
        a.nh //= tp
        a.nkv //= tp
        a.q_proj = nn.Linear(h, a.nh * d, bias=False)
        a.k_proj = nn.Linear(h, a.nkv * d, bias=False)
        a.v_proj = nn.Linear(h, a.nkv * d, bias=False)
        a.o_proj = AllReduced(nn.Linear(a.nh * d, h, bias=False))
        i = p.gate_proj.out_features // tp
        p.gate_proj = nn.Linear(h, i, bias=False)
        p.up_proj = nn.Linear(h, i, bias=False)
        p.down_proj = AllReduced(nn.Linear(i, h, bias=False))
    return model


TP2_PLAN = """graph: llama.onnx
parallel: {device_num: 2, training: true, search_mode: factor_propagation}
modules:
  "layers.*.self_attn.q_proj": colwise
  "layers.*.self_attn.k_proj": colwise
  "layers.*.self_attn.v_proj": colwise
  "layers.*.self_attn.o_proj": rowwise
  "layers.*.mlp.gate_proj": colwise
  "layers.*.mlp.up_proj": colwise
  "layers.*.mlp.down_proj": rowwise
"""


def cases():
    ids = lambda vocab, shape: torch.randint(0, vocab, shape)  # noqa: E731
    return {
        "llama": lambda: (eager_models.Llama(), ids(2000, (2, 256)), ids(2000, (2, 256))),
        "llama_tp2": lambda: (llama_tp_rank(eager_models.Llama()), ids(2000, (2, 256)), ids(2000, (2, 256))),
        "bert": lambda: (eager_models.Bert(), ids(2000, (2, 256)), ids(2000, (2, 256))),
        "vit": lambda: (eager_models.ViT(), torch.randn(4, 3, 64, 64), ids(100, (4,))),
        "gpt2_mid": lambda: (eager_models.GPT2(), ids(32000, (4, 512)), ids(32000, (4, 512))),
    }


def main():
    out_dir, names = sys.argv[1], sys.argv[2:] or ["llama", "llama_tp2", "bert", "vit"]
    os.makedirs(out_dir, exist_ok=True)
    for name in names:
        torch.manual_seed(0)
        model, x, labels = cases()[name]()
        if name == "llama_tp2":
            with open(os.path.join(out_dir, "tp2_plan.yaml"), "w") as f:
                f.write(TP2_PLAN)
        else:
            model.eval()
            torch.onnx.export(model, (x,), os.path.join(out_dir, name + ".onnx"), opset_version=17,
                              input_names=["x"], output_names=["logits"])
        print(json.dumps({"model": name, **measure(model, x, labels)}), flush=True)


if __name__ == "__main__":
    main()
