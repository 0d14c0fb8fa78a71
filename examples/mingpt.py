"""minGPT on "tpu": a small GPT (token and position embeddings, pre-norm blocks of causal
self-attention and an MLP, tied output layer) trained as a character model on
examples/data/lighthouse.txt with AdamW, then sampled (top-k, or greedy with --greedy).

    python examples/mingpt.py
    python examples/mingpt.py --compile --steps 300 --sample-chars 300
"""

import math
import os
import sys

import common
import torch
import torch.nn.functional as F
from torch import nn

TEXT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "lighthouse.txt")


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block_size, dim, heads, layers):
        super().__init__()
        self.block_size = block_size
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block_size, dim)
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(layers)))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.blocks(self.tok(idx) + self.pos(pos))
        return self.head(self.ln(x))


@torch.no_grad()
def sample(model, context, n, top_k, greedy):
    """n new tokens after `context` ([1, block_size]), each from the logits of the last
    block_size tokens (top-k sampling, or argmax). The window keeps its shape, so every step
    reuses the same programs."""
    out = []
    for _ in range(n):
        logits = model(context)[:, -1, :].float()
        if greedy:
            nxt = logits.argmax(-1, keepdim=True)
        else:
            values, _ = torch.topk(logits, top_k)
            logits = logits.masked_fill(logits < values[:, -1:], float("-inf"))
            nxt = torch.multinomial(logits.softmax(-1), 1)
        out.append(nxt)
        context = torch.cat([context[:, 1:], nxt], dim=1)
    return torch.cat(out, dim=1) if out else context[:, :0]


def main(argv=None):
    p = common.parser(__doc__.splitlines()[0], steps=100, batch_size=32)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--sample-chars", type=int, default=200)
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--greedy", action="store_true", help="argmax instead of top-k sampling")
    args = p.parse_args(argv)
    device = common.setup(args)
    with open(TEXT) as f:
        text = f.read()
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    model = GPT(len(chars), args.block_size, args.dim, args.heads, args.layers).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    g = torch.Generator().manual_seed(args.seed)
    batches = []
    for _ in range(args.steps):
        starts = torch.randint(
            0, data.numel() - args.block_size - 1, (args.batch_size,), generator=g
        )
        chunk = torch.stack([data[s : s + args.block_size + 1] for s in starts.tolist()])
        batches.append(chunk.to(device))

    def loss_fn(m, chunk):
        logits = m(chunk[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1).float(), chunk[:, 1:].flatten())

    step = common.optimizer_step(model, opt, loss_fn, args)
    result = common.train(step, batches, args, device, "chars", args.batch_size * args.block_size)
    model.eval()
    prompt = data[: args.block_size].unsqueeze(0).to(device)
    with common.autocast(args):
        out = sample(model, prompt, args.sample_chars, args.top_k, args.greedy)
    result["generated"] = out[0].cpu()
    result["model"], result["prompt"] = model, prompt
    result["text"] = "".join(chars[i] for i in result["generated"].tolist())
    if not args.quiet:
        print(f"sample: {result['text']!r}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
