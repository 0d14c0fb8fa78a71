"""Ragged paged attention in JAX: the portable form, for every PJRT plugin.

The inputs are those of JAX's Pallas TPU kernel (`jax.experimental.pallas.ops.tpu.
ragged_paged_attention`), so either can serve a step:
- `q` [tokens, heads, head_dim]: the queries of all requests, flat, request after request;
- `kv_pages` [pages, page_size, 2 * kv_heads, head_dim]: the paged cache, keys at even and values
  at odd combined heads;
- `kv_lens` [seqs]: each request's context length, its new tokens included (0 past the last);
- `page_indices` [seqs, pages_per_seq]: each request's pages;
- `cu_q_lens` [seqs + 1]: where each request's queries start (the total past the last request).

A query at position p sees the keys at positions <= p (and > p - sliding_window). The work is cut
into items: a tile of queries of one request (one row when the request decodes, `rows` rows
otherwise) against one chunk of its keys (`chunk` tokens, whole pages). Only the chunks a tile
can see are items, so the work follows each request's own query and context lengths. A while
loop takes `width` items at a time, with an online softmax per query row; its trip count is data,
not shape, so the program depends only on the padded token count and the tables' sizes. Memory
beyond the queries and the output is one iteration's chunks.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

# A finite stand-in for -inf in the running maxima: exp(FLOOR - FLOOR) is 1, not nan, for rows
# that have seen no key yet (their sums are 0, so nothing changes).
FLOOR = -1e30


class _Tiles(NamedTuple):
    """Query tiles of one kind (decoding rows or prefill tiles), padded to a fixed count: the
    first row and row count of each, the position of its first row, its request, its first
    visible key chunk, and the running count of items (chunks) before each tile."""

    row: jax.Array
    rows: jax.Array
    pos: jax.Array
    req: jax.Array
    first: jax.Array
    cum: jax.Array


def _tiles(cu_q_lens, kv_lens, *, decode, rows, count, chunk, window):
    """The tiles of decoding requests (one query each, a tile per row) or of the others (tiles
    of `rows` rows), `count` of them, the ones past the last real tile empty."""
    q_lens = cu_q_lens[1:] - cu_q_lens[:-1]
    mine = (q_lens == 1) if decode else (q_lens > 1)
    per_req = jnp.where(mine, (q_lens + rows - 1) // rows, 0)
    ends = jnp.cumsum(per_req)
    t = jnp.arange(count)
    req = jnp.clip(jnp.searchsorted(ends, t, side="right"), 0, q_lens.shape[0] - 1)
    real = t < ends[-1]
    k = t - (ends[req] - per_req[req])  # the tile's index within its request
    row = cu_q_lens[req] + k * rows
    n = jnp.where(real, jnp.minimum(rows, q_lens[req] - k * rows), 0)
    pos = kv_lens[req] - q_lens[req] + k * rows
    last = pos + n - 1
    first = 0 if window is None else jnp.maximum(pos - window + 1, 0) // chunk
    items = jnp.where(real, last // chunk + 1 - first, 0)
    cum = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(items).astype(jnp.int32)])
    return _Tiles(row, n, pos, req, first + jnp.zeros_like(row), cum)


def _attend(q, kv_pages, page_indices, tiles, state, *, rows, chunk, width, scale, soft_cap,
            window, k_scale, v_scale):  # fmt: skip
    """Runs every item of `tiles`, `width` at a time, into the online-softmax `state`
    (running max, sum and output per query row, one spare row at the end for padding)."""
    tokens, heads, dim = q.shape
    _, page_size, combined, _ = kv_pages.shape
    kv_heads = combined // 2
    group = heads // kv_heads
    pages_per_chunk = chunk // page_size
    count = tiles.row.shape[0]
    total = tiles.cum[-1]
    padded_q = jnp.concatenate([q, jnp.zeros((rows, heads, dim), q.dtype)])
    r_ar, k_ar = jnp.arange(rows), jnp.arange(chunk)
    spare = tokens  # the state row written by rows outside every tile

    def body(i, state):
        m_s, l_s, o_s = state
        j = i * width + jnp.arange(width)
        t = jnp.clip(jnp.searchsorted(tiles.cum, j, side="right") - 1, 0, count - 1)
        c = tiles.first[t] + j - tiles.cum[t]  # the item's chunk of its request's keys
        live = (r_ar < tiles.rows[t][:, None]) & (j < total)[:, None]  # [width, rows]
        q_pos = tiles.pos[t][:, None] + r_ar
        qt = padded_q[tiles.row[t][:, None] + r_ar].reshape(width, rows, kv_heads, group, dim)
        page = jnp.clip(c[:, None] * pages_per_chunk + jnp.arange(pages_per_chunk), 0,
                        page_indices.shape[1] - 1)  # fmt: skip
        kv = kv_pages[page_indices[tiles.req[t][:, None], page]].reshape(
            width, chunk, combined, dim
        )
        k, v = kv[:, :, 0::2], kv[:, :, 1::2]
        if k_scale is not None:  # an fp8 cache: values times their scale, in q's type
            k = (k.astype(jnp.float32) * k_scale).astype(q.dtype)
            v = (v.astype(jnp.float32) * v_scale).astype(q.dtype)
        s = jnp.einsum("wqkgd,wskd->wkgqs", qt, k, preferred_element_type=jnp.float32) * scale
        if soft_cap is not None:
            s = soft_cap * jnp.tanh(s / soft_cap)
        k_pos = c[:, None] * chunk + k_ar
        seen = live[:, :, None] & (k_pos[:, None, :] <= q_pos[:, :, None])
        if window is not None:
            seen &= k_pos[:, None, :] > q_pos[:, :, None] - window
        seen = seen[:, None, None]  # [width, 1, 1, rows, chunk]
        m_i = jnp.max(jnp.where(seen, s, FLOOR), -1)
        p = jnp.where(seen, jnp.exp(s - m_i[..., None]), 0.0)
        l_i = p.sum(-1)
        o_i = jnp.einsum("wkgqs,wskd->wkgqd", p.astype(v.dtype), v,
                         preferred_element_type=jnp.float32)  # fmt: skip

        # Items of one tile are neighbours: combine them per tile (g counts tiles from the
        # first of this iteration), then merge each tile into the state once.
        g = t - t[0]
        m_g = jnp.maximum(jax.ops.segment_max(m_i, g, num_segments=width), FLOOR)
        a = jnp.exp(m_i - m_g[g])
        l_g = jax.ops.segment_sum(l_i * a, g, num_segments=width)
        o_g = jax.ops.segment_sum(o_i * a[..., None], g, num_segments=width)
        tg = t[0] + jnp.arange(width)
        ok = (tg <= t[-1])[:, None] & (r_ar < tiles.rows[jnp.minimum(tg, count - 1)][:, None])
        at = jnp.where(ok, tiles.row[jnp.minimum(tg, count - 1)][:, None] + r_ar, spare)
        m_g = m_g.transpose(0, 3, 1, 2).reshape(width, rows, heads)
        l_g = l_g.transpose(0, 3, 1, 2).reshape(width, rows, heads)
        o_g = o_g.transpose(0, 3, 1, 2, 4).reshape(width, rows, heads, dim)
        m_old = m_s[at]
        m_new = jnp.maximum(m_old, m_g)
        b_old, b_new = jnp.exp(m_old - m_new), jnp.exp(m_g - m_new)
        l_new = l_s[at] * b_old + l_g * b_new
        o_new = o_s[at] * b_old[..., None] + o_g * b_new[..., None]
        return m_s.at[at].set(m_new), l_s.at[at].set(l_new), o_s.at[at].set(o_new)

    return jax.lax.fori_loop(0, (total + width - 1) // width, body, state)


def sizes(tokens, seqs, page_size, pages_per_seq):
    """(rows per prefill tile, key chunk in tokens, decode items and prefill items an iteration
    takes): about 128 keys a chunk, and at most 16k keys gathered an iteration."""
    rows = min(32, tokens)
    pages = max(1, min(pages_per_seq, 128 // page_size))
    chunk = pages * page_size
    keys = max(chunk, 16384)
    decode_width = max(1, min(tokens, keys // chunk))
    prefill_width = max(1, min(tokens // rows + 1, keys // chunk // 4))
    return rows, chunk, decode_width, prefill_width


def ragged_paged_attention(q, kv_pages, kv_lens, page_indices, cu_q_lens, sinks=None, k_scale=None,
                           v_scale=None, *, scale, sliding_window=None, soft_cap=None):  # fmt: skip
    """Attention of the ragged queries `q` over their requests' pages (see the module's
    docstring); `sinks` [heads]: a logit per head added to every row's softmax (attention
    sinks); `k_scale`/`v_scale` (scalars): the scales of an fp8 cache. Returns [tokens, heads,
    head_dim] in q's dtype, zeros for rows past the last request's queries."""
    tokens, heads, dim = q.shape
    seqs, pages_per_seq = page_indices.shape
    rows, chunk, decode_width, prefill_width = sizes(tokens, seqs, kv_pages.shape[1],
                                                     pages_per_seq)  # fmt: skip
    if sinks is None:
        m = jnp.full((tokens + 1, heads), FLOOR, jnp.float32)
        l = jnp.zeros((tokens + 1, heads), jnp.float32)
    else:  # the sink's exp(sink - max) joins the sum from the start
        m = jnp.broadcast_to(sinks.astype(jnp.float32), (tokens + 1, heads))
        l = jnp.ones((tokens + 1, heads), jnp.float32)
    state = (m, l, jnp.zeros((tokens + 1, heads, dim), jnp.float32))
    common = {
        "chunk": chunk,
        "scale": scale,
        "soft_cap": soft_cap,
        "window": sliding_window,
        "k_scale": k_scale,
        "v_scale": v_scale,
    }  # fmt: skip
    cu_q_lens, kv_lens = cu_q_lens.astype(jnp.int32), kv_lens.astype(jnp.int32)
    decoding = _tiles(cu_q_lens, kv_lens, decode=True, rows=1, count=tokens, chunk=chunk,
                      window=sliding_window)  # fmt: skip
    state = _attend(q, kv_pages, page_indices, decoding, state, rows=1, width=decode_width,
                    **common)  # fmt: skip
    prefill_tiles = tokens // rows + min(seqs, tokens // 2)
    prefilling = _tiles(cu_q_lens, kv_lens, decode=False, rows=rows, count=prefill_tiles,
                        chunk=chunk, window=sliding_window)  # fmt: skip
    m, l, o = _attend(q, kv_pages, page_indices, prefilling, state, rows=rows,
                      width=prefill_width, **common)  # fmt: skip
    l = l[:tokens, :, None]
    out = jnp.where(l > 0, o[:tokens] / jnp.where(l > 0, l, 1.0), 0.0)
    return out.astype(q.dtype)
