"""Ragged paged attention on "tpu" (torch_pjrt.kernels.ragged_paged_attention) against dense
padded attention over the same paged cache (what the vLLM backend did before it: queries laid out
[padded requests, longest query], every request's whole context gathered, one masked SDPA), in
Fused eager, for batches of one padded token count whose real work differs: decode steps over
short and long contexts, a prefill, a mixed step. Both read a cache of a 2,048-token model (16-token
pages), 8 heads over 2 KV heads of 64; timed as the median of --rounds calls after a warm-up
call (compiles excluded), each call synchronized.

Prints per batch the useful work (sum over requests of query x context length), both times and
dense/ragged, then JSON last: {batch: {"work": ..., "ragged_ms": ..., "dense_ms": ...,
"dense_over_ragged": ...}}.

    python benchmarks/ragged_attention.py [--rounds N]
"""

import argparse
import json
import math
from functools import partial

import torch
import torch.nn.functional as F
from timing import median_ms

import torch_pjrt
from torch_pjrt.kernels import ragged_paged_attention

HEADS, KV_HEADS, DIM, PAGE, MAX_LEN, SEQS = 8, 2, 64, 16, 2048, 128
PAGES_PER_SEQ = MAX_LEN // PAGE
TOKENS = 256  # the padded token count of every batch
BATCHES = {  # (query length, context length) per request
    "decode 16 x ctx 128": [(1, 128)] * 16,
    "decode 16 x ctx 2000": [(1, 2000)] * 16,
    "decode 64 x ctx 64..2000": [(1, 64 + 30 * i) for i in range(64)],
    "prefill 256": [(256, 256)],
    "mixed: prefill 192 + 64 decodes": [(192, 1200)] + [(1, 300)] * 64,
}


def inputs(requests):
    g = torch.Generator().manual_seed(0)
    n = len(requests)
    cu = torch.zeros(SEQS + 1, dtype=torch.int32)
    cu[1 : n + 1] = torch.tensor([q for q, _ in requests]).cumsum(0)
    cu[n + 1 :] = cu[n]
    kv_lens = torch.zeros(SEQS, dtype=torch.int32)
    kv_lens[:n] = torch.tensor([c for _, c in requests])
    pages = torch.randperm(SEQS * PAGES_PER_SEQ, generator=g).reshape(SEQS, PAGES_PER_SEQ) + 1
    q = torch.randn(TOKENS, HEADS, DIM, generator=g)
    kv = torch.randn(SEQS * PAGES_PER_SEQ + 1, PAGE, 2 * KV_HEADS, DIM, generator=g)
    return [t.to("tpu") for t in (q, kv, kv_lens, pages.int(), cu)], requests


def dense(q, kv, requests, pages, longest, reqs):
    """The earlier backend's attention: [reqs, longest] queries against each request's whole
    context (the model's length), masked per request."""
    q_rows = torch.full((TOKENS,), reqs * longest, dtype=torch.int64)  # padding: a spare row
    q_pos = torch.zeros(reqs, longest, dtype=torch.int64)
    start = 0
    for r, (ql, ctx) in enumerate(requests):
        q_rows[start : start + ql] = r * longest + torch.arange(ql)
        q_pos[r, :ql] = ctx - ql + torch.arange(ql)
        start += ql
    q_rows, q_pos = q_rows.to("tpu"), q_pos.to("tpu")
    flat = kv.view(-1, 2 * KV_HEADS, DIM)
    slots = (pages[:reqs, :, None].long() * PAGE + torch.arange(PAGE, device="tpu")).flatten(1)
    kvr = flat[slots]  # [reqs, context, 2 * kv heads, dim]
    k, v = kvr[:, :, 0::2].transpose(1, 2), kvr[:, :, 1::2].transpose(1, 2)
    qd = q.new_zeros(reqs * longest + 1, HEADS, DIM)
    qd.index_copy_(0, q_rows, q)
    qd = qd[:-1].view(reqs, longest, HEADS, DIM).transpose(1, 2)
    key_pos = torch.arange(slots.shape[1], device="tpu")
    mask = (key_pos <= q_pos[:, :, None]) | (key_pos == 0)
    out = F.scaled_dot_product_attention(qd, k, v, attn_mask=mask[:, None], enable_gqa=True)
    out = torch.cat((out.transpose(1, 2).reshape(-1, HEADS, DIM), out.new_zeros(1, HEADS, DIM)))
    return out[q_rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch_pjrt.set_eager_mode("fused")
    results = {}
    for name, requests in BATCHES.items():
        (q, kv, kv_lens, pages, cu), requests = inputs(requests)
        longest = 1 if all(ql == 1 for ql, _ in requests) else TOKENS
        reqs = 2 ** math.ceil(math.log2(len(requests)))
        ragged = partial(ragged_paged_attention, q, kv, kv_lens, pages, cu, scale=0.125)
        ragged_ms = median_ms(ragged, args.rounds)
        dense_ms = median_ms(partial(dense, q, kv, requests, pages, longest, reqs), args.rounds)
        work = sum(ql * ctx for ql, ctx in requests)
        results[name] = {"work": work, "ragged_ms": round(ragged_ms, 2),
                         "dense_ms": round(dense_ms, 2),
                         "dense_over_ragged": round(dense_ms / ragged_ms, 2)}  # fmt: skip
        print(f"{name:<34} work {work:>9,}  ragged {ragged_ms:8.2f} ms  dense {dense_ms:8.2f} ms"
              f"  dense/ragged {dense_ms / ragged_ms:6.2f}", flush=True)  # fmt: skip
    print(json.dumps(results))


if __name__ == "__main__":
    main()
