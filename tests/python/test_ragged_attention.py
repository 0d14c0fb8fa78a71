"""Ragged paged attention on "tpu" (torch_pjrt.kernels): the portable form against a per-request
reference written here in float64 on the CPU (causal, grouped-query, sliding window, soft-capping,
sinks, fp8 caches with scales, bfloat16) on mixed batches of decoding, whole and chunked prefill
requests; against JAX's own reference through the arguments the Pallas TPU kernel gets; one
program for every batch of the same padded token count; the kernel choice and its errors."""

import math

import jax.numpy as jnp
import numpy as np
import pytest
import torch
from jax.experimental.pallas.ops.tpu.ragged_paged_attention.kernel import (
    ref_ragged_paged_attention,
)

import torch_pjrt
from torch_pjrt import kernels
from torch_pjrt.kernels import ragged_paged_attention

HEADS, KV_HEADS, DIM, PAGE = 8, 2, 32, 16
PAGES, PAGES_PER_SEQ, SEQS = 200, 24, 8
# (query length, context length) per request: decoding, a whole prefill, a chunk of a prefill,
# a long decode over several key chunks, a one-token prompt, a long chunked prefill.
MIXED = [(1, 30), (37, 37), (5, 100), (1, 300), (1, 1), (60, 256)]


def batch(requests, tokens, seed=0, kv_dtype=torch.float32, q_dtype=torch.float32):
    """(q, kv_pages, kv_lens, page_indices, cu_q_lens) on the CPU for these requests."""
    g = torch.Generator().manual_seed(seed)
    cu = np.zeros(SEQS + 1, np.int32)
    cu[1 : len(requests) + 1] = np.cumsum([q for q, _ in requests])
    cu[len(requests) + 1 :] = cu[len(requests)]
    kv_lens = np.zeros(SEQS, np.int32)
    kv_lens[: len(requests)] = [c for _, c in requests]
    pages = torch.randperm(PAGES - 1, generator=g)[: SEQS * PAGES_PER_SEQ] + 1
    q = torch.randn(tokens, HEADS, DIM, generator=g).to(q_dtype)
    kv = torch.randn(PAGES, PAGE, 2 * KV_HEADS, DIM, generator=g).to(kv_dtype)
    return (q, kv, torch.from_numpy(kv_lens), pages.reshape(SEQS, PAGES_PER_SEQ).int(),
            torch.from_numpy(cu))  # fmt: skip


def reference(q, kv, kv_lens, pages, cu, *, scale, window=None, cap=None, sinks=None,
              k_scale=1.0, v_scale=1.0):  # fmt: skip
    """Each request's attention on its own, in float64."""
    out = torch.zeros(q.shape, dtype=torch.float64)
    group = HEADS // KV_HEADS
    for r in range(SEQS):
        start, end, length = int(cu[r]), int(cu[r + 1]), int(kv_lens[r])
        if end == start:
            continue
        rows = kv[pages[r, : math.ceil(length / PAGE)].long()].double()
        rows = rows.reshape(-1, 2 * KV_HEADS, DIM)[:length]
        k = (rows[:, 0::2] * k_scale).repeat_interleave(group, dim=1)
        v = (rows[:, 1::2] * v_scale).repeat_interleave(group, dim=1)
        s = torch.einsum("qhd,khd->hqk", q[start:end].double(), k) * scale
        if cap:
            s = cap * torch.tanh(s / cap)
        q_pos = length - (end - start) + torch.arange(end - start)
        k_pos = torch.arange(length)
        seen = k_pos <= q_pos[:, None]
        if window:
            seen &= k_pos > q_pos[:, None] - window
        s = s.masked_fill(~seen, float("-inf"))
        if sinks is not None:
            sink = sinks.double()[:, None, None].expand(-1, end - start, 1)
            s = torch.cat((s, sink), dim=-1)
        p = s.softmax(dim=-1)[..., :length]
        out[start:end] = torch.einsum("hqk,khd->qhd", p, v)
    return out


def on_tpu(args):
    return [a.to("tpu") for a in args]


@pytest.mark.parametrize("window,cap,with_sinks", [(None, None, False), (7, 3.0, True)])
def test_equals_per_request_reference(window, cap, with_sinks):
    args = batch(MIXED, tokens=176)
    sinks = torch.randn(HEADS) if with_sinks else None
    expected = reference(*args, scale=0.3, window=window, cap=cap, sinks=sinks)
    got = ragged_paged_attention(*on_tpu(args), scale=0.3, sliding_window=window, soft_cap=cap,
                                 sinks=None if sinks is None else sinks.to("tpu")).cpu()  # fmt: skip
    assert got.dtype == torch.float32
    total = int(args[4][-1])
    torch.testing.assert_close(got[:total].double(), expected[:total], atol=2e-5, rtol=1e-5)
    assert torch.all(got[total:] == 0)  # the padding rows


def test_fp8_cache_with_scales():
    q, kv, *rest = batch(MIXED, tokens=176)
    kv8 = (kv / 0.5).to(torch.float8_e4m3fn)
    k_scale, v_scale = torch.tensor(0.5), torch.tensor(0.25)
    expected = reference(q, kv8.float(), *rest, scale=0.3, k_scale=0.5, v_scale=0.25)
    got = ragged_paged_attention(*on_tpu([q, kv8, *rest]), scale=0.3,
                                 k_scale=k_scale.to("tpu"), v_scale=v_scale.to("tpu")).cpu()  # fmt: skip
    total = int(rest[2][-1])
    torch.testing.assert_close(got[:total].double(), expected[:total], atol=2e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="fp8 KV cache needs k_scale and v_scale"):
        ragged_paged_attention(*on_tpu([q, kv8, *rest]), scale=0.3)


def test_bfloat16():
    args = batch(MIXED, tokens=176, kv_dtype=torch.bfloat16, q_dtype=torch.bfloat16)
    expected = reference(*args, scale=0.3)
    got = ragged_paged_attention(*on_tpu(args), scale=0.3).cpu()
    assert got.dtype == torch.bfloat16
    total = int(args[4][-1])
    torch.testing.assert_close(got[:total].double(), expected[:total], atol=2e-2, rtol=2e-2)


def test_pallas_arguments_equal_jax_reference(monkeypatch):
    """What the Pallas path hands JAX's TPU kernel, given instead to JAX's reference of it (the
    same arguments; the kernel itself compiles only for TPUs, and JAX 0.10.2's interpreters
    cannot run it: its TPU interpret mode has no reshaped references, the generic one no
    scalar prefetch), equals the portable form."""
    args = batch(MIXED[:4], tokens=176)
    monkeypatch.setattr(kernels, "_pallas_kernel", lambda: ref_ragged_paged_attention)
    expected = kernels._pallas_fn(*(jnp.asarray(a.numpy()) for a in args), scale=0.3)
    got = ragged_paged_attention(*on_tpu(args), scale=0.3).cpu()
    total = int(args[4][-1])
    np.testing.assert_allclose(got[:total].numpy(), np.asarray(expected), atol=2e-5)


def test_one_program_per_padded_token_count():
    """Batches of 64 padded tokens whose requests, longest query and longest context all differ
    run one program (Fused eager: the cache write and the attention of a step together)."""
    batches = [
        [(1, 30)],
        [(64, 64)],
        [(1, 300), (1, 2), (20, 50)],
        [(33, 320), (1, 1), (1, 17), (2, 9), (4, 4)],
        [(1, 5)] * 8,
    ]
    with torch_pjrt.eager_mode("fused"):
        compiles = []
        for i, requests in enumerate(batches):
            q, kv, *rest = batch(requests, tokens=64, seed=i)
            before = torch_pjrt.metrics.counters()["compiles"]
            kv_tpu = kv.to("tpu")
            torch_pjrt.launch_pending()
            kv_tpu.view(-1, 2 * KV_HEADS, DIM)[1:65].add_(1.0)  # a cache write, then attention
            got = ragged_paged_attention(q.to("tpu"), kv_tpu, *on_tpu(rest), scale=0.3).cpu()
            compiles.append(torch_pjrt.metrics.counters()["compiles"] - before)
            kv.view(-1, 2 * KV_HEADS, DIM)[1:65].add_(1.0)
            total = int(rest[2][-1])
            expected = reference(q, kv, *rest, scale=0.3)
            torch.testing.assert_close(got[:total].double(), expected[:total], atol=2e-5, rtol=0)
    assert compiles[0] >= 1 and compiles[1:] == [0] * (len(batches) - 1), compiles


def test_kernel_choice(monkeypatch):
    q, kv = torch.zeros(16, HEADS, DIM, device="tpu"), torch.zeros(4, PAGE, 4, DIM, device="tpu")
    assert kernels.attention_kernel(q, kv) == "portable"  # the CPU plugin
    monkeypatch.setenv("TORCH_PJRT_ATTENTION_KERNEL", "pallas")
    with pytest.raises(NotImplementedError, match="runs on TPUs only"):
        kernels.attention_kernel(q, kv)
    monkeypatch.setenv("TORCH_PJRT_ATTENTION_KERNEL", "fast")
    with pytest.raises(ValueError, match="must be one of auto, portable, pallas"):
        kernels.attention_kernel(q, kv)
    monkeypatch.setenv("TORCH_PJRT_ATTENTION_KERNEL", "portable")
    assert kernels.attention_kernel(q, kv) == "portable"
