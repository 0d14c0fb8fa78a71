"""Custom kernel example: a small decoder-only transformer whose RMSNorm is a JAX function (a torch
op through `torch.tpu.pallas.jax_op`, backward derived with jax.vjp), trained on "tpu" in Fused
eager mode next to the same model with the torch RMSNorm. Prints both losses per step; they agree
to float32 rounding.

    python examples/custom_kernel.py [--steps 20] [--mode fused|strict|debug] [--compile]

Needs JAX (`pip install 'torch_pjrt[jax]'`); JAX only lowers the kernel, on the CPU.
"""

import argparse
import copy

import jax
import jax.numpy as jnp
import torch
import torch.nn.functional as F
from torch import nn
from torch.tpu.pallas import jax_op

import torch_pjrt


@jax_op("example::rmsnorm", differentiable=True)
def rmsnorm_kernel(x: jax.Array, weight: jax.Array, eps: float = 1e-6) -> jax.Array:
    """RMSNorm over the last axis, computed in float32 (as fused RMSNorm kernels do)."""
    x32 = x.astype(jnp.float32)
    scale = jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + eps)
    return (x32 * scale).astype(x.dtype) * weight


class RMSNorm(nn.Module):
    def __init__(self, dim, kernel, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.kernel, self.eps = kernel, eps

    def forward(self, x):
        if self.kernel:
            return rmsnorm_kernel(x, self.weight, self.eps)
        scale = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (x.float() * scale).to(x.dtype) * self.weight


class Block(nn.Module):
    def __init__(self, d, heads, kernel):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(d, kernel), RMSNorm(d, kernel)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=64, d=64, heads=4, layers=2, seq=32, kernel=False):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, kernel) for _ in range(layers))
        self.norm = RMSNorm(d, kernel)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        mask = torch.triu(torch.full((t, t), float("-inf"), device=idx.device), diagonal=1)
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))


def set_kernel(model, on):
    for m in model.modules():
        if isinstance(m, RMSNorm):
            m.kernel = on


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--mode", default="fused", choices=["fused", "strict", "debug"])
    parser.add_argument("--compile", action="store_true", help="torch.compile(backend='tpu')")
    args = parser.parse_args()

    torch.manual_seed(0)
    vocab, seq = 64, 32
    base = TinyGPT(vocab=vocab, seq=seq)
    models = {}
    for name, kernel in (("torch", False), ("jax_op", True)):
        model = copy.deepcopy(base)
        set_kernel(model, kernel)
        models[name] = model.to("tpu")
    opts = {k: torch.optim.AdamW(m.parameters(), lr=3e-3) for k, m in models.items()}
    data = torch.randint(0, vocab, (64, seq + 1))

    def step(model, opt, x, y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    steps = {k: torch.compile(step, backend="tpu") if args.compile else step for k in models}
    with torch_pjrt.eager_mode(args.mode):
        for i in range(args.steps):
            batch = data[torch.randint(0, 64, (8,))].to("tpu")
            x, y = batch[:, :-1], batch[:, 1:]
            losses = {k: steps[k](models[k], opts[k], x, y).item() for k in models}
            print(f"step {i:3d}  torch {losses['torch']:.5f}  jax_op {losses['jax_op']:.5f}")
    kernels = torch_pjrt.metrics.counters()["custom_kernels"]
    print(f"kernel lowerings: {kernels['lowerings']}, kernel calls: {kernels['calls']}")


if __name__ == "__main__":
    main()
