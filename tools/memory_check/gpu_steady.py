#!/usr/bin/env python3
# What a GPU's caching allocator holds over consecutive training steps of Hugging Face models, to
# hold irc's steady-state and first-step peaks against (docs/memory.md, "Against a real GPU").
# The method of ../shared/real-exports/memory_steady.json: float32, input_ids [4, 512], dropout
# off, zero_grad(set_to_none=True) before each step, torch.cuda.reset_peak_memory_stats() at each
# step's start; per step the bytes allocated when it starts, after the forward and loss, after
# backward, after the update, and the peak (also the peak as it stood after forward and after
# backward, which says in which phase the peak fell). Variants: the optimizer (AdamW for-loop or
# foreach, SGD with momentum), gradient checkpointing, gradients kept between steps
# (set_to_none=False), and two micro-batches accumulated per step.
#
#   python3 tools/memory_check/gpu_steady.py OUT_DIR [--export]
#
# Needs a CUDA GPU, torch and transformers (the device machine has them; CI does not run this).
# With --export it also writes each model's ONNX graph without its weights (OUT_DIR/NAME.onnx,
# for `irc memory NAME.onnx --training`), where ../shared/real-exports has none.
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

CONFIGS = {
    # ../shared/configs/llama_mid.config.json (the architecture of llama_mid.dynamo.onnx)
    "llama_mid": ("llama", dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
                                num_key_value_heads=8, vocab_size=32000, max_position_embeddings=1024, rms_norm_eps=1e-6,
                                tie_word_embeddings=False)),
    # gpt2_mid.dynamo.onnx's architecture
    "gpt2_mid": ("gpt2", dict(n_embd=1024, n_layer=8, n_head=16, vocab_size=32000, n_positions=1024, resid_pdrop=0.0,
                              embd_pdrop=0.0, attn_pdrop=0.0)),
    # ../shared/configs/qwen3_mid.config.json
    "qwen3_mid": ("qwen3", dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
                                num_key_value_heads=8, head_dim=64, vocab_size=32000, max_position_embeddings=1024,
                                rms_norm_eps=1e-6, tie_word_embeddings=False, use_cache=False)),
    # a BERT of the same size (masked-LM head), another family
    "bert_mid": ("bert", dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=8, num_attention_heads=16,
                              vocab_size=32000, max_position_embeddings=512, hidden_dropout_prob=0.0,
                              attention_probs_dropout_prob=0.0)),
}

VARIANTS = {
    "llama_mid": ["adamw", "adamw_foreach", "sgd_momentum", "adamw_checkpointing", "adamw_keep_grads", "adamw_accumulate2"],
    "gpt2_mid": ["adamw_foreach", "sgd_momentum", "adamw_checkpointing"],
    "qwen3_mid": ["adamw", "sgd_momentum", "adamw_checkpointing"],
    "bert_mid": ["adamw", "adamw_checkpointing"],
}

BATCH, SEQ = 4, 512


def build(name):
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForMaskedLM
    family, keys = CONFIGS[name]
    config = AutoConfig.for_model(family, **keys)
    config._attn_implementation = "eager"
    cls = AutoModelForMaskedLM if family == "bert" else AutoModelForCausalLM
    with torch.device("cuda"):
        model = cls.from_config(config, attn_implementation="eager")
    return model.float().train()


class Wrap(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)[0]


def optimizer_of(variant, params):
    if variant.startswith("sgd_momentum"):
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9, foreach=False)
    return torch.optim.AdamW(params, lr=1e-4, foreach=variant == "adamw_foreach")


def measure(name, variant):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = Wrap(build(name))
    if variant == "adamw_checkpointing":
        model.m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    params = [p for p in model.parameters() if p.requires_grad]
    opt = optimizer_of(variant, params)
    g = torch.Generator(device="cuda").manual_seed(0)
    ids = torch.randint(0, 32000, (BATCH, SEQ), device="cuda", generator=g)
    micro = 2 if variant == "adamw_accumulate2" else 1
    steps = []
    for _ in range(3):
        opt.zero_grad(set_to_none=variant != "adamw_keep_grads")
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        s = {"base_bytes": torch.cuda.memory_allocated()}
        for k in range(micro):
            logits = model(ids)
            loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids.reshape(-1))
            del logits
            torch.cuda.synchronize()
            s[f"after_forward_bytes{'' if k == 0 else k}"] = torch.cuda.memory_allocated()
            s[f"peak_after_forward_bytes{'' if k == 0 else k}"] = torch.cuda.max_memory_allocated()
            loss.backward()
            del loss
            torch.cuda.synchronize()
            s[f"after_backward_bytes{'' if k == 0 else k}"] = torch.cuda.memory_allocated()
            s[f"peak_after_backward_bytes{'' if k == 0 else k}"] = torch.cuda.max_memory_allocated()
        opt.step()
        torch.cuda.synchronize()
        s["after_step_bytes"] = torch.cuda.memory_allocated()
        s["peak_bytes"] = torch.cuda.max_memory_allocated()
        steps.append(s)
    out = {"case": f"{name}/{variant}", "model": name, "variant": variant, "batch": BATCH, "seq": SEQ,
           "micro_batches": micro, "param_count": sum(p.numel() for p in params),
           "largest_param_numel": max(p.numel() for p in params),
           "step1": steps[0], "step2": steps[1], "step3": steps[2]}
    del opt, model, params
    torch.cuda.empty_cache()
    return out


def export(name, out_dir):
    import onnx
    model = Wrap(build(name)).eval()
    ids = torch.randint(0, 32000, (BATCH, SEQ), device="cuda")
    tmp = f"/tmp/export_{name}"
    os.makedirs(tmp, exist_ok=True)
    full = f"{tmp}/{name}.onnx"
    torch.onnx.export(model, (ids,), full, dynamo=True, external_data=True)
    proto = onnx.load(full, load_external_data=False)
    onnx.save_model(proto, f"{out_dir}/{name}.dynamo.onnx")  # the graph; its weights stay behind


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    results = []
    started = time.time()
    for name, variants in VARIANTS.items():
        for variant in variants:
            try:
                results.append(measure(name, variant))
            except Exception as e:  # a case that fails is recorded, the others still run
                results.append({"case": f"{name}/{variant}", "ok": False, "error": repr(e)[:500]})
            print(f"{results[-1]['case']}: {time.time() - started:.1f} s", flush=True)
            with open(f"{out_dir}/steady.json", "w") as f:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": results}, f, indent=1)
    if "--export" in sys.argv:
        for name in ("qwen3_mid", "bert_mid"):
            t = time.time()
            try:
                export(name, out_dir)
                print(f"exported {name} in {time.time() - t:.1f} s", flush=True)
            except Exception as e:
                print(f"export of {name} failed: {e!r}"[:800], flush=True)


if __name__ == "__main__":
    main()
