"""vLLM's GPU model runner on device "tpu".

Upstream's runner does the input preparation, the persistent batch and sampling in torch ops; what
changes here:
- its `torch.cuda` stream and event calls go to `torch.tpu` while the runner is built;
- the number of tokens of a step is padded to a bucket (powers of two from 16, and the largest
  batch), so a steady state reuses the programs it compiled: on this device every new shape is a
  new XLA program;
- under asynchronous scheduling, the last step's tokens enter the next step's input ids on the
  device through one program of fixed shape (`_prepare_input_ids`), and go to the host as one
  whole buffer (`_AsyncOutput`);
- the input preparation runs on the host (upstream's code over host tensors, then whole-buffer
  copies, and the slot mapping from the host block table): on the device its sizes, the step's
  request and token counts, would enter the model's programs. A step is cut into programs each
  sized by one padded count: the copies; the model's forward with the gather of each request's
  last hidden state (the padded token count); the logits, structured output's bitmask and the
  sampler (sampler.py; the padded request count);
- each attention layer gets a KV cache tensor of its own, laid out [blocks, block_size, 2 * kv
  heads, head_size] (keys and values interleaved by head; fp8 caches in torch's float8 dtype),
  instead of views of one byte buffer shared by all layers:
  an update of a PJRT buffer writes a new one, so a shared buffer would be rewritten whole by
  every layer's cache write.
"""

import dataclasses
from contextlib import contextmanager
from functools import partial

import numpy as np
import torch
import vllm.v1.worker.block_table
import vllm.v1.worker.gpu_input_batch
import vllm.v1.worker.gpu_model_runner
from vllm.distributed import get_pp_group
from vllm.v1.kv_cache_interface import AttentionSpec
from vllm.v1.utils import CpuGpuBuffer
from vllm.v1.worker.gpu_model_runner import AsyncGPUModelRunnerOutput, GPUModelRunner
from vllm.v1.worker.utils import bind_kv_cache

import torch_pjrt

from .attention import FP8_KV_CACHE_DTYPES
from .buckets import bucket, buckets
from .kv_connector import connector_views
from .lora import whole_adapter_loads
from .multimodal import step_embeddings
from .sampler import PaddedSampler, unpack_bitmask, whole_min_p_copies
from .spec_decode import use_torch_proposer_kernels, use_torch_rejection_sampler


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


class _WholeCopies(CpuGpuBuffer):
    """A CpuGpuBuffer whose host-to-device copy always moves the whole buffer: a copy of the
    first n rows would put n (the step's request or token count) into the program that holds
    it. The buffers are small (requests or tokens of one step)."""

    def copy_to_gpu(self, n=None):
        self.gpu.copy_(self.cpu, non_blocking=True)
        return self.gpu if n is None else self.gpu[:n]


class _AsyncOutput(AsyncGPUModelRunnerOutput):
    """Upstream's output of an asynchronously scheduled step, its torch.cuda stream and event
    calls as torch.tpu's. The sampled tokens go to the host as the sampler's whole buffer of
    them (`carried`, one per request the runner can hold), cut there to the step's requests:
    the copy of the step's rows would be a program sized by its request count."""

    def __init__(self, sampler, *, sampled_token_ids, **kwargs):
        rows = len(sampled_token_ids)
        with _cuda_calls_on_tpu():
            super().__init__(sampled_token_ids=sampler.carried, **kwargs)
        self.sampled_token_ids_cpu = self.sampled_token_ids_cpu[:rows, None]


def _copy_whole(from_tensor, to_tensor, length):
    """`copy_slice` of vLLM's input batch (sampling parameters per request), whole."""
    to_tensor.copy_(from_tensor, non_blocking=True)
    return to_tensor[:length]


def _grammar_rows(scheduler_output, grammar_output, input_batch, logits):
    """Structured output's bitmask in the rows of the padded batch (all tokens allowed in the
    others), numpy int32 [padded, words for the logits' vocabulary] (the grammar's vocabulary
    may be the tokenizer's, shorter or longer: tokens past it are allowed)."""
    if any(scheduler_output.scheduled_spec_decode_tokens.values()):
        raise NotImplementedError('vLLM on "tpu": speculative decoding is not supported')
    packed = grammar_output.grammar_bitmask
    padded, vocab = logits.shape
    words = -(-vocab // 32)
    rows = np.full((padded, words), -1, dtype=np.int32)
    index = {req_id: i for i, req_id in enumerate(input_batch.req_ids)}
    for k, req_id in enumerate(grammar_output.structured_output_request_ids):
        if req_id in index:
            rows[index[req_id], : packed.shape[1]] = packed[k, :words]
    return rows


class _NoSlotMappingKernel:
    """Upstream's slot mapping kernel: the runner computes slots on the host instead."""

    def register_warmup(self, **kwargs):
        pass

    def __call__(self, *args):
        if args[11] != 1:  # dcp_world_size
            raise NotImplementedError('vLLM on "tpu": context parallelism is not supported')


class TpuModelRunner(GPUModelRunner):
    def __init__(self, vllm_config, device):
        vllm.v1.worker.block_table._COMPUTE_SLOT_MAPPING_KERNEL = _NoSlotMappingKernel()
        vllm.v1.worker.gpu_input_batch.copy_slice = _copy_whole
        vllm.v1.worker.gpu_model_runner.apply_grammar_bitmask = self._take_grammar_bitmask
        use_torch_rejection_sampler()
        use_torch_proposer_kernels()
        with _cuda_calls_on_tpu():
            super().__init__(vllm_config, device)
        self.cascade_attn_enabled = False
        self._host_tensors = {
            name: torch.zeros_like(getattr(self, name), device="cpu") for name in self._HOST_TENSORS
        }
        self._sampled_rows = self._make_buffer(self.max_num_reqs, dtype=torch.int64)
        # Asynchronous scheduling: per token of a step, the row of the last step's sampled
        # tokens that is its input id (a request carried over), else -1.
        self._carried_rows = self._make_buffer(self.max_num_tokens, dtype=torch.int64)
        # Padded request count -> arange on the device: the rows of the logits.
        self._first_rows = {
            n: torch.arange(n, device=self.device) for n in buckets(self.max_num_reqs, 1)
        }
        self._gather_sampled_rows = False
        self._all_hidden = None
        self._grammar = None  # the step's structured output bitmask, for the sampler
        self._padded_sampler = PaddedSampler(self)
        vllm.v1.worker.gpu_model_runner.AsyncGPUModelRunnerOutput = partial(
            _AsyncOutput, self._padded_sampler
        )
        whole_min_p_copies(self.input_batch.logitsprocs)

    def may_reinitialize_input_batch(self, *args, **kwargs):
        super().may_reinitialize_input_batch(*args, **kwargs)
        whole_min_p_copies(self.input_batch.logitsprocs)

    def _make_buffer(self, *size, dtype, numpy=True):
        buffer = super()._make_buffer(*size, dtype=dtype, numpy=numpy)
        buffer.__class__ = _WholeCopies
        return buffer

    # Device tensors and buffers that upstream's input preparation computes from the step's
    # request and token counts (the tensors have host twins, zeroed for each step).
    _HOST_TENSORS = ("positions", "seq_lens", "num_computed_tokens")
    _HOST_BUFFERS = ("req_indices", "query_pos", "num_scheduled_tokens", "query_start_loc")

    @contextmanager
    def _prepared_on_host(self):
        """Upstream's input preparation with those tensors on the host: its ops on them run
        there, then each goes to the device whole. On the device their sizes (the step's counts)
        would make a new program for each new count."""
        device = {name: getattr(self, name) for name in self._HOST_TENSORS}
        buffers = [getattr(self, name) for name in self._HOST_BUFFERS]
        for name, host in self._host_tensors.items():
            setattr(self, name, host.zero_())
        for buffer in buffers:
            buffer.gpu, buffer.device_tensor = buffer.cpu, buffer.gpu
        try:
            yield
        finally:
            for buffer in buffers:
                buffer.gpu = buffer.device_tensor
                del buffer.device_tensor
            for name, tensor in device.items():
                tensor.copy_(getattr(self, name), non_blocking=True)
                setattr(self, name, tensor)

    def _prepare_inputs(self, scheduler_output, num_scheduled_tokens_np):
        """Upstream's, on the host; the slot mappings from the host block tables; logits indices
        for the padded number of requests."""
        for table in self.input_batch.block_table.block_tables:
            table.block_table.__class__ = table.slot_mapping.__class__ = _WholeCopies
        with self._prepared_on_host():
            logits_indices, spec_decode, max_sampled = super()._prepare_inputs(
                scheduler_output, num_scheduled_tokens_np
            )
            tokens = scheduler_output.total_num_scheduled_tokens
            positions = self.positions[:tokens].numpy()
            for table in self.input_batch.block_table.block_tables:
                self._host_slot_mapping(table, self.req_indices.np[:tokens], positions)
        # The rows the logits come from: each request's last token, for every request the
        # runner can hold (past the step's requests, its last token again: the query starts
        # past them hold the token total). The model's forward gathers them, so its programs
        # see a fixed number of rows.
        self._sampled_rows.np[:] = self.query_start_loc.np[1:] - 1
        for name in (*self._HOST_BUFFERS, "_sampled_rows"):
            getattr(self, name).copy_to_gpu()
        torch_pjrt.launch_pending()  # the step's input preparation, as a program of its own
        self._padded_sampler.admit(self.input_batch)
        if spec_decode is not None:
            # A step verifying draft tokens: upstream's logits rows and rejection sampler
            # (spec_decode.py), programs sized by its request and draft token counts.
            return logits_indices, spec_decode, max_sampled
        # The logits' rows among those: one per padded request.
        reqs = bucket(self.input_batch.num_reqs, self.max_num_reqs, minimum=1)
        self._gather_sampled_rows = True
        return self._first_rows[reqs], None, max_sampled

    def _prepare_input_ids(self, scheduler_output, num_reqs, total_num_scheduled_tokens,
                           cu_num_tokens):  # fmt: skip
        """Upstream's, except under asynchronous scheduling: the host's token ids go to the
        device whole, then the last step's sampled token of each request carried over goes
        into its last input id on the device, in one program of fixed shape for every step
        (upstream's copies and scatters are sized by the number of such requests)."""
        if not self.use_async_scheduling:
            return super()._prepare_input_ids(
                scheduler_output, num_reqs, total_num_scheduled_tokens, cu_num_tokens
            )
        if any(scheduler_output.scheduled_spec_decode_tokens.values()):
            raise NotImplementedError(
                'vLLM on "tpu": asynchronous scheduling with speculative decoding is not supported'
            )
        batch = self.input_batch
        # Past the step's tokens, ids the whole copy may carry from an earlier step: the
        # placeholders (-1) of tokens that were carried over.
        self.input_ids.np[total_num_scheduled_tokens:] = 0
        previous, batch.prev_sampled_token_ids = batch.prev_sampled_token_ids, None
        try:  # upstream's, as with nothing carried over: the host's ids
            super()._prepare_input_ids(
                scheduler_output, num_reqs, total_num_scheduled_tokens, cu_num_tokens
            )
        finally:
            batch.prev_sampled_token_ids = previous
        rows = self._carried_rows.np
        rows.fill(-1)
        if previous is not None:
            prev = self.prev_positions.np[:num_reqs]
            common = prev >= 0
            rows[cu_num_tokens[:num_reqs][common] - 1] = prev[common]
        index = self._carried_rows.copy_to_gpu()
        carried = self._padded_sampler.carried[index.clamp(min=0)]
        ids = self.input_ids.gpu
        ids.copy_(torch.where(index >= 0, carried, ids))

    def _copy_draft_token_ids_to_cpu(self, *args, **kwargs):
        """Upstream's, its torch.cuda stream calls as torch.tpu's (a draft model's tokens)."""
        with _cuda_calls_on_tpu():
            super()._copy_draft_token_ids_to_cpu(*args, **kwargs)

    def _take_grammar_bitmask(self, scheduler_output, grammar_output, input_batch, logits):
        """Upstream's `apply_grammar_bitmask`: here the bitmask is kept for the step's sampler,
        which applies it in its own program."""
        self._grammar = _grammar_rows(scheduler_output, grammar_output, input_batch, logits)

    def _sample(self, logits, spec_decode_metadata):
        """The padded sampler (sampler.py) over every padded row, in one program with the
        logits that depends on the padded request count only; upstream's over the step's rows
        for what it does not take (spec decoding, logprob_token_ids, custom logits
        processors...)."""
        n = self.input_batch.num_reqs
        metadata = self.input_batch.sampling_metadata
        # Asynchronous scheduling: the last step's tokens in place of the outputs'
        # placeholders, for the penalties and bad words that read them (as upstream's).
        self.input_batch.update_async_output_token_ids()
        bitmask, self._grammar = self._grammar, None
        padded = spec_decode_metadata is None and not self._padded_sampler.unsupported(metadata)
        if self.speculative_config and not metadata.no_penalties:
            padded = False  # its penalty counts miss the tokens that verification steps accept
        if padded:
            return self._padded_sampler(logits, metadata, self.input_batch, bitmask)
        if bitmask is not None:
            banned = unpack_bitmask(torch.from_numpy(bitmask).to(logits.device), logits.shape[1])
            logits.masked_fill_(banned, float("-inf"))
        output = super()._sample(logits if spec_decode_metadata else logits[:n],
                                 spec_decode_metadata)  # fmt: skip
        if spec_decode_metadata is None and self.use_async_scheduling:
            self._padded_sampler.carry(output.sampled_token_ids[:, 0])
            torch_pjrt.launch_pending()  # not into the next step's input preparation
        return output

    def _get_prompt_logprobs_dict(self, hidden_states, num_scheduled_tokens):
        """Upstream's, from every token's hidden state (the step's output holds only the rows
        the logits come from)."""
        tokens = sum(num_scheduled_tokens.values())
        return super()._get_prompt_logprobs_dict(self._all_hidden[:tokens], num_scheduled_tokens)

    def _preprocess(self, scheduler_output, num_input_tokens, intermediate_tensors=None):
        """Upstream's, then the positions again: upstream zeroes those past the step's tokens
        (a write whose size is the token count), the host copy has them zero already. A
        multimodal model's input embeddings come from multimodal.py (upstream's are sized by
        the unpadded token count), the rest from upstream's text path."""
        multimodal = (self.supports_mm_inputs and get_pp_group().is_first_rank
                      and not self.model_config.is_encoder_decoder)  # fmt: skip
        if multimodal:
            embeds = step_embeddings(self, scheduler_output, num_input_tokens)
            self.supports_mm_inputs = False  # upstream's text-only preparation, below
        try:
            result = super()._preprocess(scheduler_output, num_input_tokens, intermediate_tensors)
        finally:
            self.supports_mm_inputs |= multimodal
        self.positions.copy_(self._host_tensors["positions"], non_blocking=True)
        if multimodal:
            input_ids, _, positions, intermediate, model_kwargs, ec_output = result
            model_kwargs.update(self._extract_mm_kwargs(scheduler_output))
            if not self.model.requires_raw_input_tokens:
                input_ids = None
            result = (input_ids, embeds, positions, intermediate, model_kwargs, ec_output)
        return result

    def _get_slot_mappings(self, num_tokens_padded, num_reqs_padded, num_tokens_unpadded,
                           ubatch_slices=None):  # fmt: skip
        """Upstream's, without its fill of the padding slots (a write whose size is the token
        count): the host slot mapping has them -1 already."""
        return super()._get_slot_mappings(
            num_tokens_padded, num_reqs_padded, num_tokens_padded, ubatch_slices
        )

    @staticmethod
    def _host_slot_mapping(table, req, positions):
        """Token -> KV cache slot through the host copy of the block table (what upstream's
        kernel computes on the device); slots past the step's tokens are -1."""
        offset = positions % table.kv_cache_block_size
        index = (positions // table.kv_cache_block_size) * table.blocks_per_kv_block
        index += offset // table.block_size
        number = table.block_table.np[req, index].astype(np.int64)
        slots = table.slot_mapping.np
        slots[: len(req)] = number * table.block_size + offset % table.block_size
        slots[len(req) :] = -1
        table.slot_mapping.copy_to_gpu()

    def _model_forward(self, *args, **kwargs):
        """The model's forward and the gather of the rows the logits come from (one per request
        the runner can hold), launched as its own programs: they depend on the padded token
        count only, the logits and the sampler that follow on the padded request count only.
        Pooling models get every token's hidden state, as upstream; a pipeline stage before
        the last passes on all of its activations."""
        output = super()._model_forward(*args, **kwargs)
        last_stage = isinstance(output, torch.Tensor)  # else IntermediateTensors
        if self._gather_sampled_rows and not self.is_pooling_model and last_stage:
            self._all_hidden = output  # for prompt logprobs; kept, so the program is the same
            output = output[self._sampled_rows.gpu]
        self._gather_sampled_rows = False  # a step's; upstream's dummy runs gather their own
        torch_pjrt.launch_pending()
        return output

    def load_lora_model(self, *args, **kwargs):
        model = super().load_lora_model(*args, **kwargs)
        whole_adapter_loads(self.lora_manager)  # lora.py: the same programs for every adapter
        return model

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
                kv_caches[name] = torch.zeros(
                    (num_blocks, block_size, 2 * spec.num_kv_heads, spec.head_size),
                    dtype=FP8_KV_CACHE_DTYPES.get(self.cache_config.cache_dtype, spec.dtype),
                    device=self.device,
                )
        for name, target in self.shared_kv_cache_layers.items():
            kv_caches[name] = kv_caches[target]
        if self.vllm_config.kv_transfer_config is not None:
            kv_caches = connector_views(kv_caches)
        bind_kv_cache(kv_caches, self.compilation_config.static_forward_context, self.kv_caches)
        return kv_caches
