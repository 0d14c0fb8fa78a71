"""Paged attention for vLLM on device "tpu": ragged paged attention (torch_pjrt.kernels).

The KV cache of a layer is [blocks, block_size, 2 * kv heads, head_size], keys at even and values
at odd combined heads (the layout of JAX's Pallas TPU kernel; the model runner allocates it). A
step writes the new keys and values at `slot_mapping` (one index_copy_; padded tokens go to block
0, vLLM's null block, which no request owns), then runs the attention of the flat queries over
each request's own pages, in the same program. Its inputs are the model runner's whole buffers
(sequence lengths, query starts, block table: sized by the scheduler's limits), so the step's
programs depend only on its padded token count, never on its requests' query or context
lengths; the work follows those lengths (see kernels/ragged_paged_attention.py).
"""

from dataclasses import dataclass
from typing import ClassVar

import torch
from vllm.config import get_current_vllm_config
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionImpl,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
)
from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend
from vllm.v1.kv_cache_interface import KVCacheLayout

from .. import kernels
from .kv_connector import from_connector_view

# vLLM's names of fp8 KV caches, and the dtype the cache is kept in.
FP8_KV_CACHE_DTYPES = {
    "fp8": torch.float8_e4m3fn,
    "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}


@register_backend(AttentionBackendEnum.CUSTOM)
class TpuAttentionBackend(AttentionBackend):
    accept_output_buffer: bool = True
    forward_includes_kv_cache_update: bool = False
    supported_dtypes: ClassVar[list[torch.dtype]] = [torch.float16, torch.bfloat16, torch.float32]
    supported_kv_cache_dtypes: ClassVar[list[str]] = ["auto", *FP8_KV_CACHE_DTYPES]

    @staticmethod
    def get_name() -> str:
        return "CUSTOM"  # vLLM's name for a backend registered from outside

    @staticmethod
    def get_impl_cls():
        return TpuAttentionImpl

    @staticmethod
    def get_builder_cls():
        return TpuAttentionMetadataBuilder

    @staticmethod
    def get_kv_cache_shape(num_blocks, block_size, num_kv_heads, head_size, cache_dtype_str="auto"):
        return (num_blocks, block_size, 2 * num_kv_heads, head_size)

    @classmethod
    def get_supported_head_sizes(cls) -> list[int]:
        return []  # any

    @classmethod
    def supported_kv_cache_layouts(cls):
        return (KVCacheLayout.LBNHC,)

    @classmethod
    def supports_attn_type(cls, attn_type: str) -> bool:
        return attn_type == AttentionType.DECODER

    @staticmethod
    def use_cascade_attention(*args, **kwargs) -> bool:
        return False


@dataclass
class TpuAttentionMetadata:
    num_actual_tokens: int
    # The model runner's whole buffers (sized by the scheduler's limits, not by the step):
    kv_lens: torch.Tensor  # [max requests] int32: context lengths, 0 past the step's requests
    page_indices: torch.Tensor  # [max requests, blocks per request] int32: the block table
    cu_q_lens: torch.Tensor  # [max requests + 1] int32: query starts, the total past the last


def _whole(view, shape):
    """The runner's whole buffer behind `view`, a slice of its first rows sized by the step's
    request count (a size that would otherwise enter the step's programs)."""
    return view.as_strided(shape, view.stride(), view.storage_offset())


class TpuAttentionMetadataBuilder(AttentionMetadataBuilder[TpuAttentionMetadata]):
    def __init__(self, kv_cache_spec, layer_names, vllm_config, device):
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.max_reqs = vllm_config.scheduler_config.max_num_seqs

    def build(
        self,
        common_prefix_len: int,
        common_attn_metadata: CommonAttentionMetadata,
        fast_build: bool = False,
    ) -> TpuAttentionMetadata:
        cm = common_attn_metadata
        table = cm.block_table_tensor
        return TpuAttentionMetadata(
            num_actual_tokens=cm.num_actual_tokens,
            kv_lens=_whole(cm.seq_lens, (self.max_reqs,)),
            page_indices=_whole(table, (self.max_reqs, table.stride(0))),
            cu_q_lens=_whole(cm.query_start_loc, (self.max_reqs + 1,)),
        )

    def build_for_drafting(self, common_attn_metadata, draft_index):
        """A draft model's steps: the proposer's tensors are its own, sized by the step's request
        count, so they are padded to the runner's sizes here (programs sized by that count)."""
        cm = common_attn_metadata
        n, pad = cm.num_reqs, self.max_reqs - cm.num_reqs
        starts = cm.query_start_loc[: n + 1]
        table = cm.block_table_tensor[:n]
        return TpuAttentionMetadata(
            num_actual_tokens=cm.num_actual_tokens,
            kv_lens=torch.nn.functional.pad(cm.seq_lens[:n], (0, pad)),
            page_indices=torch.nn.functional.pad(table, (0, 0, 0, pad)),
            cu_q_lens=torch.cat((starts, starts[-1:].expand(pad))),
        )


class TpuAttentionImpl(AttentionImpl[TpuAttentionMetadata]):
    def __init__(
        self,
        num_heads: int,
        head_size: int,
        scale: float,
        num_kv_heads: int | None = None,
        alibi_slopes: list[float] | None = None,
        sliding_window: int | None = None,
        kv_cache_dtype: str = "auto",
        logits_soft_cap: float | None = None,
        attn_type: str = AttentionType.DECODER,
        kv_sharing_target_layer_name: str | None = None,
        sinks: torch.Tensor | None = None,
    ) -> None:
        unsupported = {
            "ALiBi slopes": alibi_slopes is not None,
            f"KV cache dtype {kv_cache_dtype!r}": kv_cache_dtype != "auto"
            and kv_cache_dtype not in FP8_KV_CACHE_DTYPES,
            f"attention type {attn_type!r}": attn_type != AttentionType.DECODER,
        }
        for what, present in unsupported.items():
            if present:
                raise NotImplementedError(f'vLLM attention on "tpu" does not support {what} yet')
        if sinks is not None and sinks.shape != (num_heads,):
            raise ValueError(
                f"vLLM attention on tpu: sinks of shape {tuple(sinks.shape)} for {num_heads} heads"
            )
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads or num_heads
        self.sliding_window = sliding_window
        self.logits_soft_cap = logits_soft_cap or None
        self.sinks = sinks
        self.kv_cache_dtype = kv_cache_dtype
        self.fp8 = kv_cache_dtype in FP8_KV_CACHE_DTYPES
        self.kv_sharing_target_layer_name = kv_sharing_target_layer_name
        self.attn_type = attn_type
        # With a KV connector the layer holds its cache as the connector's view (kv_connector.py).
        self.connector_view = get_current_vllm_config().kv_transfer_config is not None

    def do_kv_cache_update(self, layer, key, value, kv_cache, slot_mapping):
        if key.shape[0] != slot_mapping.shape[0]:
            raise RuntimeError(
                f"vLLM attention on tpu: {key.shape[0]} keys for {slot_mapping.shape[0]} slots"
            )
        if self.connector_view:
            kv_cache = from_connector_view(kv_cache)
        blocks, block_size, combined, d = kv_cache.shape
        # Keys and values interleaved by head: [tokens, 2 * kv heads, head_size].
        new = torch.stack((key, value), dim=2).reshape(key.shape[0], combined, d)
        if self.fp8:  # stored divided by the layer's scales
            scales = torch.stack((layer._k_scale, layer._v_scale)).reshape(1, 1, 2, 1)
            new = (new.view(-1, combined // 2, 2, d).float() / scales).view_as(new)
            new = new.to(kv_cache.dtype)
        slots = torch.where(slot_mapping < 0, torch.zeros_like(slot_mapping), slot_mapping)
        kv_cache.view(blocks * block_size, combined, d).index_copy_(0, slots, new)

    def forward(
        self,
        layer,
        query,
        key,
        value,
        kv_cache,
        attn_metadata: TpuAttentionMetadata,
        output,
        output_scale=None,
        output_block_scale=None,
    ):
        if output_scale is not None or output_block_scale is not None:
            raise NotImplementedError('vLLM attention on "tpu": fused output quantization')
        if attn_metadata is None:  # profiling run
            return output.fill_(0)
        if self.connector_view:
            kv_cache = from_connector_view(kv_cache)
        m = attn_metadata
        q = query.view(-1, self.num_heads, self.head_size)
        out = kernels.ragged_paged_attention(
            q,
            kv_cache,
            m.kv_lens,
            m.page_indices,
            m.cu_q_lens,
            scale=self.scale,
            sliding_window=self.sliding_window,
            soft_cap=self.logits_soft_cap,
            sinks=self.sinks,
            k_scale=layer._k_scale if self.fp8 else None,
            v_scale=layer._v_scale if self.fp8 else None,
        )
        output.copy_(out.view_as(output))
        return output
