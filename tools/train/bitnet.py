"""BitNet b1.58 in PyTorch: the `bitnet-b1.58` forward pass of docs/GGUF-FORMAT.md (§3.4, §3.5) with
quantization-aware training.

BitLinear quantizes on the fly and passes gradients straight through (STE) to the float weights
and activations:
  weights     absmean ternary: s = mean|W|, W_q = clamp(round(W / s), -1, 1) * s
  activations per-token absmax int8: a = 127 / max(max|x|, 1e-5), x_q = clamp(round(x a), -128, 127) / a
torch.round rounds half to even, as bitnet.cpp's nearest_int does.

`infer_numerics=True` adds the rounding points of the inference engine (docs/GGUF-FORMAT.md §3.6, decode step):
F16 embeddings, K/V and q rounded to F16, attention probabilities rounded to F16 before the V
product, the final RMSNorm output rounded to F16 before the tied logits.
"""

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    def __init__(self, **kw):
        self.n_vocab = 4096
        self.n_embd = 256
        self.n_layer = 5
        self.n_head = 4
        self.n_head_kv = 2
        self.n_ff = 768
        self.n_ctx = 256
        self.rms_eps = 1e-5
        self.rope_base = 10000.0
        for k, v in kw.items():
            if not hasattr(self, k):
                raise ValueError(f"unknown config key {k}")
            setattr(self, k, v)
        self.head_dim = self.n_embd // self.n_head
        for n_in in (self.n_embd, self.n_head * self.head_dim, self.n_ff):
            if n_in % 128:
                raise ValueError(f"projection input width {n_in} is not a multiple of 128 (I2_S)")

    def to_dict(self):
        return {k: v for k, v in vars(self).items() if k != "head_dim"}


def f16(x):
    return x.half().float()


def ternarize(w):
    """Absmean ternary weights scale * {-1, 0, 1}, in float."""
    s = w.abs().mean().clamp(min=1e-5)
    return (w / s).round().clamp(-1, 1) * s


def quantize_act(x):
    a = 127.0 / x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-5)
    return (x * a).round().clamp(-128, 127) / a


class BitLinear(nn.Linear):
    def __init__(self, n_in, n_out):
        super().__init__(n_in, n_out, bias=False)

    def forward(self, x):
        w = self.weight
        w_q = w + (ternarize(w) - w).detach()
        x_q = x + (quantize_act(x) - x).detach()
        return F.linear(x_q, w_q)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_table(n_ctx, head_dim, base):
    """cos/sin [n_ctx, head_dim/2] built as ggml does (docs/GGUF-FORMAT.md §3.6): float32 angles, multiplied
    iteratively by base^(-2/head_dim)."""
    theta_scale = np.float32(np.power(np.float32(base), np.float32(-2.0 / head_dim)))
    theta = np.arange(n_ctx, dtype=np.float32)
    cols = []
    for _ in range(head_dim // 2):
        cols.append(theta.copy())
        theta = (theta * theta_scale).astype(np.float32)
    ang = np.stack(cols, axis=1)
    return torch.from_numpy(np.cos(ang)), torch.from_numpy(np.sin(ang))


def apply_rope(x, cos, sin):
    """NEOX / rotate_half: pairs (i, i + d/2). x [B, H, T, D], cos/sin [T, D/2]."""
    d2 = x.shape[-1] // 2
    x1, x2 = x[..., :d2], x[..., d2:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        kv = c.n_head_kv * c.head_dim
        self.attn_norm = RMSNorm(c.n_embd, c.rms_eps)
        self.attn_q = BitLinear(c.n_embd, c.n_head * c.head_dim)
        self.attn_k = BitLinear(c.n_embd, kv)
        self.attn_v = BitLinear(c.n_embd, kv)
        self.attn_sub_norm = RMSNorm(c.n_head * c.head_dim, c.rms_eps)
        self.attn_output = BitLinear(c.n_head * c.head_dim, c.n_embd)
        self.ffn_norm = RMSNorm(c.n_embd, c.rms_eps)
        self.ffn_gate = BitLinear(c.n_embd, c.n_ff)
        self.ffn_up = BitLinear(c.n_embd, c.n_ff)
        self.ffn_sub_norm = RMSNorm(c.n_ff, c.rms_eps)
        self.ffn_down = BitLinear(c.n_ff, c.n_embd)

    def forward(self, h, cos, sin, mask, infer):
        c = self.c
        B, T, _ = h.shape
        a = self.attn_norm(h)
        q = self.attn_q(a).view(B, T, c.n_head, c.head_dim).transpose(1, 2)
        k = self.attn_k(a).view(B, T, c.n_head_kv, c.head_dim).transpose(1, 2)
        v = self.attn_v(a).view(B, T, c.n_head_kv, c.head_dim).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        if infer:
            q, k, v = f16(q), f16(k), f16(v)
        group = c.n_head // c.n_head_kv
        k = k.repeat_interleave(group, dim=1)  # query head i uses kv head i // group
        v = v.repeat_interleave(group, dim=1)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c.head_dim)) + mask
        p = torch.softmax(s, dim=-1)
        if infer:
            p = f16(p)
        o = (p @ v).transpose(1, 2).reshape(B, T, c.n_head * c.head_dim)
        h = h + self.attn_output(self.attn_sub_norm(o))
        f = self.ffn_norm(h)
        z = F.relu(self.ffn_gate(f)).square() * self.ffn_up(f)
        return h + self.ffn_down(self.ffn_sub_norm(z))


class BitNet(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.token_embd = nn.Embedding(c.n_vocab, c.n_embd)
        self.blocks = nn.ModuleList([Block(c) for _ in range(c.n_layer)])
        self.output_norm = RMSNorm(c.n_embd, c.rms_eps)
        cos, sin = rope_table(c.n_ctx, c.head_dim, c.rope_base)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, tokens, infer_numerics=False):
        """tokens [B, T] -> logits [B, T, n_vocab]."""
        T = tokens.shape[1]
        emb = self.token_embd.weight
        if infer_numerics:
            emb = f16(emb)
        h = F.embedding(tokens, emb)
        mask = torch.full((T, T), float("-inf")).triu(1)
        cos, sin = self.rope_cos[:T], self.rope_sin[:T]
        for b in self.blocks:
            h = b(h, cos, sin, mask, infer_numerics)
        y = self.output_norm(h)
        if infer_numerics:
            y = f16(y)
        return y @ emb.t()

    def tensors(self):
        """Float weights under their GGUF names (docs/GGUF-FORMAT.md §3.3), [out, in] row-major."""
        out = {"token_embd": self.token_embd.weight, "output_norm": self.output_norm.weight}
        for i, b in enumerate(self.blocks):
            for name in (
                "attn_norm", "attn_q", "attn_k", "attn_v", "attn_sub_norm", "attn_output",
                "ffn_norm", "ffn_gate", "ffn_up", "ffn_sub_norm", "ffn_down",
            ):
                out[f"blk.{i}.{name}"] = getattr(b, name).weight
        return {k: v.detach().float().contiguous() for k, v in out.items()}
