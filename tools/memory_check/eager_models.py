# Eager models written as Hugging Face's modeling code writes them (float32, eager attention, no
# dropout), for tools/memory_check/measure.py: what torch holds, to compare irc's estimate with.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(s, h, eps=1e-6):
        super().__init__(); s.weight = nn.Parameter(torch.ones(h)); s.eps = eps
    def forward(s, x):
        v = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(v + s.eps)
        return s.weight * x

def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]; x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)

class LlamaAttn(nn.Module):
    def __init__(s, h, nh, nkv):
        super().__init__(); s.nh, s.nkv, s.d = nh, nkv, h // nh
        s.q_proj = nn.Linear(h, nh * s.d, bias=False); s.k_proj = nn.Linear(h, nkv * s.d, bias=False)
        s.v_proj = nn.Linear(h, nkv * s.d, bias=False); s.o_proj = nn.Linear(nh * s.d, h, bias=False)
    def forward(s, x, cos, sin, mask):
        b, t, _ = x.shape
        q = s.q_proj(x).view(b, t, -1, s.d).transpose(1, 2)
        k = s.k_proj(x).view(b, t, -1, s.d).transpose(1, 2)
        v = s.v_proj(x).view(b, t, -1, s.d).transpose(1, 2)
        cos = cos.unsqueeze(1); sin = sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin); k = (k * cos) + (rotate_half(k) * sin)
        rep = s.nh // s.nkv
        if rep > 1:
            k = k[:, :, None].expand(b, s.nkv, rep, t, s.d).reshape(b, s.nh, t, s.d)
            v = v[:, :, None].expand(b, s.nkv, rep, t, s.d).reshape(b, s.nh, t, s.d)
        w = torch.matmul(q, k.transpose(2, 3)) * (s.d ** -0.5)
        w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = F.dropout(w, p=0.0, training=s.training)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, t, -1)
        return s.o_proj(o)

class LlamaMLP(nn.Module):
    def __init__(s, h, i):
        super().__init__(); s.gate_proj = nn.Linear(h, i, bias=False); s.up_proj = nn.Linear(h, i, bias=False)
        s.down_proj = nn.Linear(i, h, bias=False); s.act = nn.SiLU()
    def forward(s, x): return s.down_proj(s.act(s.gate_proj(x)) * s.up_proj(x))

class LlamaLayer(nn.Module):
    def __init__(s, h, nh, nkv, i):
        super().__init__(); s.self_attn = LlamaAttn(h, nh, nkv); s.mlp = LlamaMLP(h, i)
        s.input_layernorm = RMSNorm(h); s.post_attention_layernorm = RMSNorm(h)
    def forward(s, x, cos, sin, mask):
        x = x + s.self_attn(s.input_layernorm(x), cos, sin, mask)
        return x + s.mlp(s.post_attention_layernorm(x))

class Llama(nn.Module):
    def __init__(s, V=2000, h=256, L=2, nh=8, nkv=8, i=688):
        super().__init__(); s.embed_tokens = nn.Embedding(V, h)
        s.layers = nn.ModuleList([LlamaLayer(h, nh, nkv, i) for _ in range(L)])
        s.norm = RMSNorm(h); s.lm_head = nn.Linear(h, V, bias=False); s.d = h // nh
        s.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, s.d, 2).float() / s.d)), persistent=False)
    def forward(s, ids):
        b, t = ids.shape
        x = s.embed_tokens(ids)
        pos = torch.arange(t).unsqueeze(0).expand(b, t)
        f = (s.inv_freq[None, :, None].expand(b, -1, 1) @ pos[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((f, f), dim=-1); cos = emb.cos(); sin = emb.sin()
        mask = torch.full((t, t), torch.finfo(torch.float32).min).triu(1)[None, None].expand(b, 1, t, t)
        for l in s.layers: x = l(x, cos, sin, mask)
        return s.lm_head(s.norm(x))

class BertAttn(nn.Module):
    def __init__(s, h, nh):
        super().__init__(); s.nh, s.d = nh, h // nh
        s.query = nn.Linear(h, h); s.key = nn.Linear(h, h); s.value = nn.Linear(h, h)
        s.dense = nn.Linear(h, h); s.LayerNorm = nn.LayerNorm(h, eps=1e-12)
    def forward(s, x, mask):
        b, t, h = x.shape
        q = s.query(x).view(b, t, s.nh, s.d).transpose(1, 2)
        k = s.key(x).view(b, t, s.nh, s.d).transpose(1, 2)
        v = s.value(x).view(b, t, s.nh, s.d).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2)) * (s.d ** -0.5) + mask
        w = F.dropout(F.softmax(w, dim=-1), p=0.0, training=s.training)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, t, h)
        return s.LayerNorm(s.dense(o) + x)

class BertLayer(nn.Module):
    def __init__(s, h, nh, i, act):
        super().__init__(); s.attention = BertAttn(h, nh); s.intermediate = nn.Linear(h, i)
        s.output = nn.Linear(i, h); s.LayerNorm = nn.LayerNorm(h, eps=1e-12); s.act = act
    def forward(s, x, mask):
        x = s.attention(x, mask)
        return s.LayerNorm(s.output(s.act(s.intermediate(x))) + x)

class Bert(nn.Module):
    def __init__(s, V=2000, h=256, L=2, nh=4, i=1024, t=128):
        super().__init__(); s.word = nn.Embedding(V, h); s.pos = nn.Embedding(512, h); s.typ = nn.Embedding(2, h)
        s.ln = nn.LayerNorm(h, eps=1e-12)
        s.layers = nn.ModuleList([BertLayer(h, nh, i, nn.GELU()) for _ in range(L)])
        s.head_dense = nn.Linear(h, h); s.head_ln = nn.LayerNorm(h, eps=1e-12); s.decoder = nn.Linear(h, V)
    def forward(s, ids):
        b, t = ids.shape
        pos = torch.arange(t).unsqueeze(0)
        x = s.ln(s.word(ids) + s.typ(torch.zeros_like(ids)) + s.pos(pos))
        mask = torch.zeros(b, 1, 1, t)
        for l in s.layers: x = l(x, mask)
        return s.decoder(s.head_ln(F.gelu(s.head_dense(x))))

class ViTAttn(nn.Module):
    def __init__(s, h, nh):
        super().__init__(); s.nh, s.d = nh, h // nh
        s.query = nn.Linear(h, h); s.key = nn.Linear(h, h); s.value = nn.Linear(h, h); s.dense = nn.Linear(h, h)
    def forward(s, y):
        b, t, h = y.shape
        q = s.query(y).view(b, t, s.nh, s.d).transpose(1, 2)
        k = s.key(y).view(b, t, s.nh, s.d).transpose(1, 2)
        v = s.value(y).view(b, t, s.nh, s.d).transpose(1, 2)
        w = F.softmax(torch.matmul(q, k.transpose(-1, -2)) * (s.d ** -0.5), dim=-1)
        return s.dense(torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, t, h))

class ViTMLP(nn.Module):
    def __init__(s, h, i):
        super().__init__(); s.fc1 = nn.Linear(h, i); s.fc2 = nn.Linear(i, h); s.act = nn.GELU()
    def forward(s, y): return s.fc2(s.act(s.fc1(y)))

class ViTLayer(nn.Module):
    def __init__(s, h, nh, i):
        super().__init__(); s.ln1 = nn.LayerNorm(h); s.ln2 = nn.LayerNorm(h); s.attn = ViTAttn(h, nh); s.mlp = ViTMLP(h, i)
    def forward(s, x):
        x = s.attn(s.ln1(x)) + x
        return s.mlp(s.ln2(x)) + x

class ViT(nn.Module):
    def __init__(s, h=256, L=2, nh=4, i=1024, img=64, p=8, classes=100):
        super().__init__(); s.proj = nn.Conv2d(3, h, p, p); n = (img // p) ** 2
        s.cls = nn.Parameter(torch.zeros(1, 1, h)); s.pos = nn.Parameter(torch.zeros(1, n + 1, h))
        s.layers = nn.ModuleList([ViTLayer(h, nh, i) for _ in range(L)])
        s.ln = nn.LayerNorm(h); s.classifier = nn.Linear(h, classes)
    def forward(s, px):
        b = px.shape[0]
        x = torch.cat((s.cls.expand(b, -1, -1), s.proj(px).flatten(2).transpose(1, 2)), dim=1) + s.pos
        for l in s.layers: x = l(x)
        return s.classifier(s.ln(x)[:, 0, :])

class Conv1D(nn.Module):
    def __init__(s, nf, nx):
        super().__init__(); s.nf = nf; s.weight = nn.Parameter(torch.randn(nx, nf) * 0.02); s.bias = nn.Parameter(torch.zeros(nf))
    def forward(s, x):
        size_out = x.size()[:-1] + (s.nf,)
        return torch.addmm(s.bias, x.view(-1, x.size(-1)), s.weight).view(size_out)

class NewGELU(nn.Module):
    def forward(s, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

class GPT2Block(nn.Module):
    def __init__(s, h, nh, npos):
        super().__init__(); s.ln_1 = nn.LayerNorm(h); s.ln_2 = nn.LayerNorm(h); s.nh, s.d = nh, h // nh
        s.c_attn = Conv1D(3 * h, h); s.c_proj = Conv1D(h, h); s.c_fc = Conv1D(4 * h, h); s.c_proj2 = Conv1D(h, 4 * h); s.act = NewGELU()
        s.register_buffer("bias", torch.tril(torch.ones(npos, npos, dtype=torch.bool)).view(1, 1, npos, npos), persistent=False)
    def forward(s, x):
        b, t, h = x.shape
        q, k, v = s.c_attn(s.ln_1(x)).split(h, dim=2)
        q = q.view(b, t, s.nh, s.d).transpose(1, 2); k = k.view(b, t, s.nh, s.d).transpose(1, 2); v = v.view(b, t, s.nh, s.d).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
        causal = s.bias[:, :, :t, :t]
        w = torch.where(causal, w.to(w.dtype), torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        w = F.softmax(w, dim=-1)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, t, h)
        x = x + s.c_proj(o)
        return x + s.c_proj2(s.act(s.c_fc(s.ln_2(x))))

class GPT2(nn.Module):
    def __init__(s, V=32000, h=1024, L=8, nh=16, npos=1024):
        super().__init__(); s.wte = nn.Embedding(V, h); s.wpe = nn.Embedding(npos, h)
        s.h = nn.ModuleList([GPT2Block(h, nh, npos) for _ in range(L)]); s.ln_f = nn.LayerNorm(h)
        s.lm_head = nn.Linear(h, V, bias=False); s.lm_head.weight = s.wte.weight
    def forward(s, ids):
        t = ids.shape[1]
        x = s.wte(ids) + s.wpe(torch.arange(t).unsqueeze(0))
        for blk in s.h: x = blk(x)
        return s.lm_head(s.ln_f(x))
