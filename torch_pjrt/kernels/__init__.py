"""Serving kernels as torch ops on "tpu", written in JAX and lowered through torch.tpu.pallas.

`ragged_paged_attention(q, kv_pages, kv_lens, page_indices, cu_q_lens, ...)`: attention of the
flat queries of a batch of requests over their pages of a paged KV cache (the inputs of JAX's
Pallas TPU kernel; see kernels/ragged_paged_attention.py). Where the plugin is libtpu and the
shapes suit it, JAX's Pallas kernel runs; elsewhere the portable form, a StableHLO while loop over
the work items. TORCH_PJRT_ATTENTION_KERNEL=portable forces the portable form, =pallas the
Pallas kernel (an error where it cannot run). Each call records one node, so it joins the
program of the ops around it (the KV cache write of the same step, in Fused eager).

`grouped_matmul(lhs, rhs, group_sizes)`: the experts' matmul of a mixture-of-experts layer over
rows sorted by expert (kernels/grouped_matmul.py). On libtpu JAX's Pallas megablox kernel runs,
elsewhere the portable `ragged_dot`. TORCH_PJRT_GROUPED_MATMUL=portable forces the portable form,
=megablox the kernel (in Pallas's interpret mode off TPUs: slow, for checking its arguments).
"""

import functools
import os

import jax
import torch

from .. import _C
from ..pallas import _JAX_DTYPES, kernel_op
from . import grouped_matmul as _gmm
from . import ragged_paged_attention as _portable

__all__ = ["attention_kernel", "grouped_matmul", "grouped_matmul_kernel", "ragged_paged_attention"]

_KERNELS = ("auto", "portable", "pallas")


def _portable_fn(
    q: jax.Array,
    kv_pages: jax.Array,
    kv_lens: jax.Array,
    page_indices: jax.Array,
    cu_q_lens: jax.Array,
    sinks: jax.Array | None = None,
    k_scale: jax.Array | None = None,
    v_scale: jax.Array | None = None,
    scale: float = 1.0,
    sliding_window: int | None = None,
    soft_cap: float | None = None,
    fp8: str | None = None,
) -> jax.Array:
    if fp8:  # the cache's bytes (kernels take no float8 tensors), in their float8 format
        kv_pages = jax.lax.bitcast_convert_type(kv_pages, getattr(jax.numpy, fp8))
    return _portable.ragged_paged_attention(
        q, kv_pages, kv_lens, page_indices, cu_q_lens, sinks, k_scale, v_scale,
        scale=scale, sliding_window=sliding_window, soft_cap=soft_cap,
    )  # fmt: skip


def _pallas_kernel():
    """JAX's Pallas ragged paged attention for TPUs (its reference implementation takes the same
    arguments, which is how the tests check what this module passes it)."""
    from jax.experimental.pallas.ops.tpu.ragged_paged_attention import ragged_paged_attention

    return ragged_paged_attention


def _pallas_fn(
    q: jax.Array,
    kv_pages: jax.Array,
    kv_lens: jax.Array,
    page_indices: jax.Array,
    cu_q_lens: jax.Array,
    scale: float = 1.0,
    sliding_window: int | None = None,
    soft_cap: float | None = None,
    k_scale: float | None = None,
    v_scale: float | None = None,
) -> jax.Array:
    # Every request up to the last has queries; the ones past it have none.
    num_seqs = jax.numpy.sum(cu_q_lens[1:] > cu_q_lens[:-1], keepdims=True).astype("int32")
    return _pallas_kernel()(
        q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs, sm_scale=scale,
        sliding_window=sliding_window, soft_cap=soft_cap, k_scale=k_scale, v_scale=v_scale,
    )  # fmt: skip


def _jax_dtype(dtype):
    return _JAX_DTYPES[dtype]


class _Kernel:
    """A JAX function as a kernel: called directly in eager code (once per layer of every step,
    so without the op's dispatch), through its torch op while torch.compile traces."""

    def __init__(self, name, fn):
        self.impl = kernel_op(name, fn)
        self.op = self.impl.define()

    def __call__(self, tensors, statics):
        if torch.compiler.is_compiling():
            return self.op(*tensors, **dict(statics))
        return self.impl.call(tensors, statics)


@functools.cache
def _kernels():
    return (
        _Kernel("torch_pjrt::ragged_paged_attention", _portable_fn),
        _Kernel("torch_pjrt::ragged_paged_attention_pallas", _pallas_fn),
    )


@functools.cache
def _gmm_kernels():
    return (
        _Kernel("torch_pjrt::grouped_matmul", _gmm.portable),
        _Kernel("torch_pjrt::grouped_matmul_megablox", _gmm.megablox),
    )


def _pallas_unsuited(q, kv_pages, sinks, fp8):
    """Why JAX's Pallas TPU kernel cannot serve these inputs (None when it can)."""
    if _C._platform_name().lower() != "tpu":
        return f"it runs on TPUs only (the plugin's platform is {_C._platform_name()})"
    if sinks is not None:
        return "it has no attention sinks"
    if fp8:
        return "fp8 caches need their scales as constants there"
    if q.shape[-1] % 128:
        return f"it needs a head size that is a multiple of 128 (got {q.shape[-1]})"
    from jax.experimental.pallas.ops.tpu.ragged_paged_attention import kernel

    try:  # the kernel's own check of the head counts' tiling
        kernel.get_min_heads_per_blk(q.shape[1], kv_pages.shape[2], _jax_dtype(q.dtype),
                                     _jax_dtype(kv_pages.dtype))  # fmt: skip
    except ValueError as e:
        return str(e)
    return None


def attention_kernel(q, kv_pages, sinks=None, fp8=False):
    """ "pallas" or "portable": the kernel `ragged_paged_attention` runs for these inputs."""
    choice = os.environ.get("TORCH_PJRT_ATTENTION_KERNEL", "auto")
    if choice not in _KERNELS:
        raise ValueError(
            f"TORCH_PJRT_ATTENTION_KERNEL must be one of {', '.join(_KERNELS)}, not {choice!r}"
        )
    if choice == "portable":
        return "portable"
    why = _pallas_unsuited(q, kv_pages, sinks, fp8)
    if choice == "pallas" and why:
        raise NotImplementedError(f"ragged_paged_attention: the Pallas kernel cannot run: {why}")
    return "portable" if why else "pallas"


def ragged_paged_attention(q, kv_pages, kv_lens, page_indices, cu_q_lens, *, scale,
                           sliding_window=None, soft_cap=None, sinks=None, k_scale=None,
                           v_scale=None):  # fmt: skip
    """Attention of the flat queries `q` [tokens, heads, head_dim] of a batch of requests over
    the paged cache `kv_pages` [pages, page_size, 2 * kv_heads, head_dim] (keys at even, values
    at odd combined heads). `kv_lens` [seqs] (int32): each request's context length, its new
    tokens included; `page_indices` [seqs, pages_per_seq] (int32); `cu_q_lens` [seqs + 1]
    (int32): where each request's queries start. A query at position p sees keys at positions
    <= p and > p - `sliding_window`; `soft_cap` caps the logits (cap * tanh(logit / cap));
    `sinks` [heads]: a logit per head that joins every softmax; `k_scale`/`v_scale`: the scales
    of an fp8 cache (one-element tensors). Rows past the last request's queries are zeros."""
    fp8 = kv_pages.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
    if fp8 and (k_scale is None or v_scale is None):
        raise ValueError("ragged_paged_attention: an fp8 KV cache needs k_scale and v_scale")
    portable, pallas = _kernels()
    statics = (("scale", float(scale)), ("sliding_window", sliding_window), ("soft_cap", soft_cap))
    if attention_kernel(q, kv_pages, sinks, fp8) == "pallas":
        return pallas((q, kv_pages, kv_lens, page_indices, cu_q_lens),
                      statics + (("k_scale", None), ("v_scale", None)))  # fmt: skip
    if fp8:
        k_scale, v_scale = k_scale.reshape(()), v_scale.reshape(())
        statics += (("fp8", str(kv_pages.dtype).removeprefix("torch.")),)
        kv_pages = kv_pages.view(torch.uint8)
    else:
        statics += (("fp8", None),)
    return portable((q, kv_pages, kv_lens, page_indices, cu_q_lens, sinks, k_scale, v_scale),
                    statics)  # fmt: skip


_GMM_KERNELS = ("auto", "portable", "megablox")


def grouped_matmul_kernel(dtype):
    """ "megablox" or "portable": the kernel `grouped_matmul` runs for inputs of this dtype."""
    choice = os.environ.get("TORCH_PJRT_GROUPED_MATMUL", "auto")
    if choice not in _GMM_KERNELS:
        raise ValueError(
            f"TORCH_PJRT_GROUPED_MATMUL must be one of {', '.join(_GMM_KERNELS)}, not {choice!r}"
        )
    if choice != "auto":
        return choice
    suited = dtype in (torch.float32, torch.bfloat16)  # megablox's dtypes
    return "megablox" if suited and _C._platform_name().lower() == "tpu" else "portable"


def grouped_matmul(lhs, rhs, group_sizes, *, transpose_rhs=False):
    """Row i of `lhs` [m, k] times `rhs`[g] ([groups, k, n], or [groups, n, k] with
    `transpose_rhs`), g being the group of row i: the rows are sorted by group, `group_sizes`
    [groups] (int32) counting each group's. Rows past sum(group_sizes) are zeros. [m, n]."""
    if lhs.dim() != 2 or rhs.dim() != 3 or group_sizes.dim() != 1:
        raise ValueError(
            "grouped_matmul: expected lhs [m, k], rhs [groups, k, n] and group_sizes [groups], "
            f"got {tuple(lhs.shape)}, {tuple(rhs.shape)} and {tuple(group_sizes.shape)}"
        )
    k = rhs.shape[2 if transpose_rhs else 1]
    if lhs.shape[1] != k or group_sizes.shape[0] != rhs.shape[0]:
        raise ValueError(
            f"grouped_matmul: lhs {tuple(lhs.shape)}, rhs {tuple(rhs.shape)} (transpose_rhs="
            f"{transpose_rhs}) and group_sizes {tuple(group_sizes.shape)} do not fit together"
        )
    if group_sizes.dtype != torch.int32 or lhs.dtype != rhs.dtype:
        raise TypeError(
            f"grouped_matmul: expected int32 group sizes and lhs and rhs of one dtype, got "
            f"{group_sizes.dtype}, {lhs.dtype} and {rhs.dtype}"
        )
    kernel = grouped_matmul_kernel(lhs.dtype)
    portable, megablox = _gmm_kernels()
    statics = (("transpose_rhs", bool(transpose_rhs)),)
    if kernel == "portable":
        return portable((lhs, rhs, group_sizes), statics)
    interpret = _C._platform_name().lower() != "tpu"
    return megablox((lhs, rhs, group_sizes), statics + (("interpret", interpret),))
