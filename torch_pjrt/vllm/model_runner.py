"""vLLM's GPU model runner on device "tpu".

Upstream's runner does the input preparation, the persistent batch and sampling in torch ops; what
changes here:
- its `torch.cuda` stream and event calls go to `torch.tpu` while the runner is built;
- the number of tokens of a step is padded to a bucket (powers of two from 16, and the largest
  batch), so a steady state reuses the programs it compiled: on this device every new shape is a
  new XLA program;
- each attention layer gets a KV cache tensor of its own, laid out [blocks, block_size, kv heads,
  2 * head_size] (keys, then values), instead of views of one byte buffer shared by all layers:
  an update of a PJRT buffer writes a new one, so a shared buffer would be rewritten whole by
  every layer's cache write.
"""

import dataclasses
from contextlib import contextmanager
from functools import partial

import torch
import vllm.v1.worker.block_table
from vllm.v1.kv_cache_interface import AttentionSpec
from vllm.v1.worker.gpu_model_runner import GPUModelRunner
from vllm.v1.worker.utils import bind_kv_cache

from .buckets import bucket


@contextmanager
def _cuda_calls_on_tpu():
    """torch.cuda's stream and event constructors as torch.tpu's, while upstream's constructor
    runs (it creates streams and events for asynchronous copies)."""
    names = ("Stream", "Event", "current_stream", "default_stream", "stream")
    saved = {n: getattr(torch.cuda, n) for n in names}

    def event(*args, blocking=None, **kwargs):  # torch.tpu.Event has no `blocking`
        return torch.tpu.Event(*args, **kwargs)

    torch.cuda.Stream = torch.tpu.Stream
    torch.cuda.Event = event
    # Distinct objects from torch.tpu's: Dynamo refuses one function registered twice.
    torch.cuda.current_stream = partial(torch.tpu.current_stream)
    torch.cuda.default_stream = partial(torch.tpu.default_stream)
    torch.cuda.stream = partial(torch.tpu.stream)
    try:
        yield
    finally:
        for n, v in saved.items():
            setattr(torch.cuda, n, v)


class _SlotMapping:
    """Token -> KV cache slot, in torch ops: what upstream computes with a Triton kernel.

    It works on the runner's whole buffers (`bind`: every request's query start, every token's
    position), not on the step's slices, so each step runs the same program whatever its request
    and token counts: the counts stay on the device (query starts past the last request repeat
    the token total), and slots past the total are -1."""

    def __init__(self):
        self.query_start_loc = self.positions = None

    def register_warmup(self, **kwargs):
        pass

    def bind(self, query_start_loc, positions):
        self.query_start_loc, self.positions = query_start_loc, positions

    def __call__(self, num_reqs, num_tokens, max_num_tokens, query_start_loc, positions,
                 block_table, block_table_stride, block_size, slot_mapping, kv_block_size,
                 blocks_per_kv_block, cp_world_size, cp_rank, cp_interleave):  # fmt: skip
        if cp_world_size != 1:
            raise NotImplementedError('vLLM on "tpu": context parallelism is not supported')
        starts = self.query_start_loc
        tokens = torch.arange(max_num_tokens, device=starts.device)
        req = torch.searchsorted(starts[1:], tokens, right=True).clamp_max(block_table.shape[0] - 1)
        pos = self.positions[:max_num_tokens].to(torch.int64)  # stale past the total: masked
        offset = pos % kv_block_size
        index = (pos // kv_block_size) * blocks_per_kv_block + offset // block_size
        number = block_table[req, index.clamp(0, block_table.shape[1] - 1)].to(torch.int64)
        slots = number * block_size + offset % block_size
        slot_mapping[:max_num_tokens] = torch.where(tokens < starts[-1], slots, -1)


class TpuModelRunner(GPUModelRunner):
    def __init__(self, vllm_config, device):
        slot_mapping = _SlotMapping()
        vllm.v1.worker.block_table._COMPUTE_SLOT_MAPPING_KERNEL = slot_mapping
        with _cuda_calls_on_tpu():
            super().__init__(vllm_config, device)
        slot_mapping.bind(self.query_start_loc.gpu, self.positions)
        self.cascade_attn_enabled = False

    def _init_device_properties(self) -> None:
        self.num_sms = 1

    def _determine_batch_execution_and_padding(self, num_tokens, *args, **kwargs):
        mode, batch, *rest = super()._determine_batch_execution_and_padding(
            num_tokens, *args, **kwargs
        )
        padded = bucket(batch.num_tokens, self.max_num_tokens)
        return (mode, dataclasses.replace(batch, num_tokens=padded), *rest)

    def initialize_kv_cache_tensors(
        self, kv_cache_config, kernel_block_sizes, kv_cache_allocation_context=None
    ):
        kv_caches = {}
        for group, block_size in zip(kv_cache_config.kv_cache_groups, kernel_block_sizes):
            spec = group.kv_cache_spec
            if not isinstance(spec, AttentionSpec):
                raise NotImplementedError(
                    f'device "tpu": KV cache of kind {type(spec).__name__} is not supported yet'
                )
            num_blocks = kv_cache_config.num_blocks * (spec.block_size // block_size)
            for name in group.layer_names:
                if name in self.shared_kv_cache_layers:
                    continue
                cache = torch.zeros(
                    (num_blocks, block_size, spec.num_kv_heads, 2 * spec.head_size),
                    dtype=spec.dtype,
                    device=self.device,
                )
                kv_caches[name] = cache.transpose(1, 2)  # vLLM's logical [B, H, N, C]
        for name, target in self.shared_kv_cache_layers.items():
            kv_caches[name] = kv_caches[target]
        bind_kv_cache(kv_caches, self.compilation_config.static_forward_context, self.kv_caches)
        return kv_caches
