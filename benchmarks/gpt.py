"""The GPT training step the eager-mode and compile benchmarks time: a decoder-only transformer
(token + position embeddings, pre-norm blocks, causal attention, tied head) trained with AdamW."""

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(
            nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d)
        )

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, d, heads, layers, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        return self.head(self.ln(self.blocks(x)))


# The configurations: vocab 256, sequence 64, batch 8.
SMALL = {"vocab": 256, "d": 128, "heads": 4, "layers": 2, "seq": 64}
LARGE = {"vocab": 256, "d": 256, "heads": 4, "layers": 6, "seq": 64}
BATCH = 8


def make(config, seed=0):
    """A model and a fixed batch (inputs, targets), on the CPU."""
    torch.manual_seed(seed)
    model = GPT(**config)
    g = torch.Generator().manual_seed(seed + 1)
    tokens = torch.randint(0, config["vocab"], (BATCH, config["seq"] + 1), generator=g)
    return model, tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def train_step(model, opt, x, y):
    """One AdamW step; returns the loss tensor."""
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss
