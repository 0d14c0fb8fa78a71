"""Paged attention for vLLM on device "tpu", in torch ops.

The KV cache of a layer is [blocks, block_size, kv heads, 2 * head_size] (keys, then values; the
model runner allocates it). A step:
- writes the new keys and values at `slot_mapping` (one index_copy_; padded tokens go to block
  0, vLLM's null block, which no request owns);
- gathers each request's blocks through its block table into [requests, context, kv heads, ...],
  lays the queries out as [requests, longest query, heads, ...] and runs scaled dot-product
  attention with a mask per request: a query at position p sees the keys at positions <= p;
- scatters the result back to the flat token order.

Every shape is padded (buckets.attention_sizes: requests to a power of two, the longest query to
1 or the padded token count, blocks per request to the model's length or a power of two; the token
count is padded by the model runner) and the index arrays are built on the host, so a step never
reads the device and the steady state reuses its programs.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from vllm.v1.attention.backend import (
    AttentionBackend,
    AttentionImpl,
    AttentionMetadataBuilder,
    AttentionType,
    CommonAttentionMetadata,
)
from vllm.v1.attention.backends.registry import AttentionBackendEnum, register_backend
from vllm.v1.kv_cache_interface import KVCacheLayout

from .buckets import attention_sizes


@register_backend(AttentionBackendEnum.CUSTOM)
class TpuAttentionBackend(AttentionBackend):
    accept_output_buffer: bool = True
    forward_includes_kv_cache_update: bool = False
    supported_dtypes: ClassVar[list[torch.dtype]] = [torch.float16, torch.bfloat16, torch.float32]
    supported_kv_cache_dtypes: ClassVar[list[str]] = ["auto"]

    @staticmethod
    def get_name() -> str:
        return "CUSTOM"  # vLLM's name for a backend registered from outside

    @staticmethod
    def get_impl_cls():
        return TpuAttentionImpl

    @staticmethod
    def get_builder_cls():
        return TpuAttentionMetadataBuilder

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
    # [padded tokens]: row of each token in the [requests * longest query] layout; padded
    # tokens point at one spare row past the end.
    token_rows: torch.Tensor
    # [requests, longest query]: the absolute position of each query (0 for padding rows).
    query_positions: torch.Tensor
    # [requests, blocks per request]: block ids (0, the null block, past a request's end).
    block_table: torch.Tensor
    num_reqs: int
    longest_query: int


class TpuAttentionMetadataBuilder(AttentionMetadataBuilder[TpuAttentionMetadata]):
    def __init__(self, kv_cache_spec, layer_names, vllm_config, device):
        super().__init__(kv_cache_spec, layer_names, vllm_config, device)
        self.block_size = kv_cache_spec.block_size
        self.max_reqs = vllm_config.scheduler_config.max_num_seqs
        max_len = vllm_config.model_config.max_model_len
        self.max_blocks = -(-max_len // self.block_size)

    def build(
        self,
        common_prefix_len: int,
        common_attn_metadata: CommonAttentionMetadata,
        fast_build: bool = False,
    ) -> TpuAttentionMetadata:
        cm = common_attn_metadata
        n = cm.num_reqs
        padded_tokens = cm.slot_mapping.shape[0]
        starts = cm.query_start_loc_cpu[: n + 1].numpy().astype(np.int64)
        seq_lens = cm.seq_lens_cpu[:n].numpy().astype(np.int64)
        query_lens = starts[1:] - starts[:-1]
        reqs, longest, blocks = attention_sizes(
            n,
            padded_tokens,
            int(query_lens.max()),
            -(-int(seq_lens.max()) // self.block_size),
            (self.max_reqs, self.max_blocks, self.block_size),
        )

        # Host-side index arrays, one transfer each.
        token_rows = np.full(padded_tokens, reqs * longest, dtype=np.int64)
        query_positions = np.zeros((reqs, longest), dtype=np.int64)
        for r in range(n):
            q = int(query_lens[r])
            token_rows[starts[r] : starts[r] + q] = r * longest + np.arange(q)
            query_positions[r, :q] = seq_lens[r] - q + np.arange(q)

        # The padded rows and columns of the runner's block table (a view of it, so no op
        # depends on n): ids of other or earlier requests' blocks, masked below.
        table = cm.block_table_tensor
        table = table.as_strided((reqs, blocks), table.stride(), table.storage_offset())
        return TpuAttentionMetadata(
            num_actual_tokens=cm.num_actual_tokens,
            token_rows=torch.from_numpy(token_rows).to(self.device),
            query_positions=torch.from_numpy(query_positions).to(self.device),
            block_table=table.to(torch.int64),
            num_reqs=reqs,
            longest_query=longest,
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
            "a sliding window": sliding_window is not None,
            "logits soft-capping": bool(logits_soft_cap),
            "attention sinks": sinks is not None,
            f"KV cache dtype {kv_cache_dtype!r}": kv_cache_dtype != "auto",
            f"attention type {attn_type!r}": attn_type != AttentionType.DECODER,
        }
        for what, present in unsupported.items():
            if present:
                raise NotImplementedError(f'vLLM attention on "tpu" does not support {what} yet')
        self.num_heads = num_heads
        self.head_size = head_size
        self.scale = float(scale)
        self.num_kv_heads = num_kv_heads or num_heads
        self.kv_cache_dtype = kv_cache_dtype
        self.kv_sharing_target_layer_name = kv_sharing_target_layer_name
        self.attn_type = attn_type

    @staticmethod
    def _flat(kv_cache):
        # vLLM hands the logical [blocks, kv heads, block_size, C] view of the runner's
        # [blocks, block_size, kv heads, C] tensor: one row per slot.
        blocks, heads, size, c = kv_cache.shape
        return kv_cache.transpose(1, 2).view(blocks * size, heads, c)

    def do_kv_cache_update(self, layer, key, value, kv_cache, slot_mapping):
        if key.shape[0] != slot_mapping.shape[0]:
            raise RuntimeError(
                f"vLLM attention on tpu: {key.shape[0]} keys for {slot_mapping.shape[0]} slots"
            )
        slots = torch.where(slot_mapping < 0, torch.zeros_like(slot_mapping), slot_mapping)
        self._flat(kv_cache).index_copy_(0, slots, torch.cat((key, value), dim=-1))

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
        m = attn_metadata
        d = self.head_size
        flat = self._flat(kv_cache)
        block_size = kv_cache.shape[2]
        # [requests, blocks * block_size] slots, then keys and values per request.
        offsets = torch.arange(block_size, device=flat.device)
        slots = (m.block_table[:, :, None] * block_size + offsets).flatten(1)
        kv = flat[slots]  # [requests, context, kv heads, 2d]
        k = kv[..., :d].transpose(1, 2)
        v = kv[..., d:].transpose(1, 2)

        rows = m.num_reqs * m.longest_query
        q = query.new_zeros((rows + 1, self.num_heads, d))
        q.index_copy_(0, m.token_rows, query)
        q = q[:rows].view(m.num_reqs, m.longest_query, self.num_heads, d).transpose(1, 2)

        key_pos = torch.arange(slots.shape[1], device=flat.device)
        visible = key_pos <= m.query_positions[:, :, None]  # [requests, query, context]
        visible = visible | (key_pos == 0)  # padding rows see one key: no all-masked rows
        out = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=visible[:, None],
            scale=self.scale,
            enable_gqa=self.num_heads != self.num_kv_heads,
        )
        out = out.transpose(1, 2).reshape(rows, self.num_heads, d)
        out = torch.cat((out, out.new_zeros((1, self.num_heads, d))))
        output.copy_(out[m.token_rows].view_as(output))
        return output
