"""vLLM's Platform for device "tpu": what vLLM asks of a device (names, memory, dtypes, the
attention backend, the worker) and the configuration it needs to run on one.

Decisions taken for the user, each overridable where vLLM has a flag for it:
- no CUDA graphs, no cascade attention;
- asynchronous scheduling as vLLM decides (on by default), except with speculative decoding,
  pipeline parallelism or a pooling model (`_check_async_scheduling`);
- the model runs in Fused eager mode by default (on the CPU plugin it served a tiny Llama about
  twice as fast as the compiled model, docs/benchmarks.md); `compilation_config` mode 1 or 2
  compiles it with `torch.compile(backend="tpu")`, one Dynamo trace and a program per padded
  shape, without vLLM's ahead-of-time compile (which expects Inductor's output);
- on the XLA CPU plugin, where "device memory" is the host's, the KV cache gets what the
  scheduler can fill (every sequence at the longest model length, twice over for prefix-cache
  reuse) up to 1 GiB, unless `--kv-cache-memory-bytes` or VLLM_CPU_KVCACHE_SPACE (GiB, as vLLM's
  CPU platform reads it) says otherwise, instead of 90% of the machine: a larger cache is memory
  the host zero-fills at start-up for blocks no request can use.
"""

import os

import torch
from vllm.logger import init_logger
from vllm.platforms.interface import Platform, PlatformEnum

logger = init_logger(f"vllm.{__name__}")  # under vLLM's configured logger

_GIB = 1 << 30


# Quantization methods vLLM 0.29 gives no path on an out-of-tree platform: GPTQ and AWQ
# checkpoints are accepted only where its Marlin kernels run; online int8 MoE experts (linear
# layers stay unquantized) have Triton, Humming and CPU kernels only.
_MARLIN_ONLY = ("gptq", "gptq_marlin", "auto_gptq", "awq", "awq_marlin", "auto_awq")
_INT8_EXPERTS = ("experts_int8", "int8_per_channel_weight_only")


def _check_quantization(model_config):
    method = model_config.quantization
    if method in _MARLIN_ONLY:
        raise NotImplementedError(
            f'device "tpu": quantization="{method}" is not supported yet: vLLM 0.29 accepts GPTQ '
            "and AWQ checkpoints only where its Marlin kernels run (CUDA, ROCm, XPU, CPU); the "
            "same weights as a compressed-tensors W4A16 or W8A16 checkpoint run here"
        )
    if method in _INT8_EXPERTS and model_config.is_moe:
        raise NotImplementedError(
            f'device "tpu": quantization="{method}" (int8 MoE experts) is not supported yet: '
            "vLLM 0.29 runs int8 experts through its Triton, Humming or CPU kernels only"
        )


def _on_cpu_plugin():
    return torch.tpu.get_device_properties(0).platform == "cpu"


def _cpu_plugin_kv_cache_bytes(vllm_config) -> int:
    """The KV cache size on the CPU plugin: VLLM_CPU_KVCACHE_SPACE GiB when set, else what
    max_num_seqs sequences of max_model_len tokens use, doubled, at most 1 GiB."""
    if os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
        return int(float(os.environ["VLLM_CPU_KVCACHE_SPACE"]) * _GIB)
    model, parallel = vllm_config.model_config, vllm_config.parallel_config
    per_token = (
        2  # keys and values
        * model.get_num_layers(parallel)
        * model.get_num_kv_heads(parallel)
        * model.get_head_size()
        * model.dtype.itemsize
    )
    tokens = vllm_config.scheduler_config.max_num_seqs * model.max_model_len
    return min(_GIB, 2 * tokens * per_token)


def _check_async_scheduling(vllm_config) -> None:
    """Asynchronous scheduling (vLLM's default) runs, except beside speculative decoding (whose
    carried-over drafts and accepted counts upstream moves with Triton kernels and copies sized
    by the step), pipeline parallelism (whose stages pass the sampled tokens in tensors sized by
    the step) and pooling models: there it is turned off, with the reason logged."""
    scheduler = vllm_config.scheduler_config
    if not scheduler.async_scheduling:
        return
    if vllm_config.speculative_config is not None:
        reason = "speculative decoding"
    elif vllm_config.parallel_config.pipeline_parallel_size > 1:
        reason = "pipeline parallelism"
    elif vllm_config.model_config is not None and vllm_config.model_config.runner_type == "pooling":
        reason = "pooling models (off there by vLLM's default too)"
    else:
        return
    logger.warning('vLLM on "tpu": asynchronous scheduling is turned off: it is not supported '
                   "with %s", reason)  # fmt: skip
    scheduler.async_scheduling = False


class TpuPlatform(Platform):
    _enum = PlatformEnum.OOT
    device_name = "tpu"
    device_type = "tpu"
    dispatch_key = "PrivateUse1"
    ray_device_key = "TPU"
    device_control_env_var = "TPU_VISIBLE_CHIPS"
    simple_compile_backend = "tpu"
    dist_backend = "tpu_dist"

    @property
    def supported_dtypes(self):
        return [torch.bfloat16, torch.float16, torch.float32]

    @classmethod
    def get_device_name(cls, device_id: int = 0) -> str:
        return torch.tpu.get_device_name(device_id)

    @classmethod
    def get_device_total_memory(cls, device_id: int = 0) -> int:
        return torch.tpu.get_device_properties(device_id).total_memory

    @classmethod
    def get_current_memory_usage(cls, device=None) -> float:
        torch.tpu.reset_peak_memory_stats(device)
        return torch.tpu.max_memory_allocated(device)

    @classmethod
    def set_device(cls, device: torch.device) -> None:
        torch.tpu.set_device(device)

    @classmethod
    def manual_seed_all(cls, seed: int) -> None:
        torch.tpu.manual_seed_all(seed)

    @classmethod
    def inference_mode(cls):
        return torch.inference_mode()

    @classmethod
    def check_if_supports_dtype(cls, dtype: torch.dtype):
        if dtype not in (torch.bfloat16, torch.float16, torch.float32):
            raise ValueError(
                f'device "tpu" runs vLLM models in bfloat16, float16 or float32, not {dtype}'
            )

    @classmethod
    def is_pin_memory_available(cls) -> bool:
        return False

    @classmethod
    def import_kernels(cls) -> None:
        pass  # no vllm._C: every kernel is torch ops on "tpu"

    @classmethod
    def get_attn_backend_cls(cls, selected_backend, attn_selector_config, num_heads=None) -> str:
        if attn_selector_config.use_mla or attn_selector_config.use_sparse:
            raise NotImplementedError(
                'device "tpu": MLA and sparse attention are not supported yet'
            )
        return "torch_pjrt.vllm.attention.TpuAttentionBackend"

    @classmethod
    def get_device_communicator_cls(cls) -> str:
        return (
            "vllm.distributed.device_communicators.base_device_communicator.DeviceCommunicatorBase"
        )

    @classmethod
    def get_punica_wrapper(cls) -> str:
        return "torch_pjrt.vllm.lora.TpuPunicaWrapper"

    @classmethod
    def opaque_attention_op(cls) -> bool:
        return True

    @classmethod
    def check_runner_kv_caches_multi_layer(cls) -> None:
        pass  # a draft model's layers share indices with the target's; each has its own cache

    @classmethod
    def support_hybrid_kv_cache(cls) -> bool:
        return False

    @classmethod
    def check_and_update_config(cls, vllm_config) -> None:
        from vllm.config import CompilationMode, CUDAGraphMode

        model_config = vllm_config.model_config
        if model_config is not None:
            model_config.disable_cascade_attn = True
        _check_async_scheduling(vllm_config)
        from .spec_decode import check_method  # not at import: vLLM imports the platform early

        check_method(vllm_config.speculative_config)
        if model_config is not None:
            _check_quantization(model_config)

        parallel_config = vllm_config.parallel_config
        if parallel_config.worker_cls == "auto":
            parallel_config.worker_cls = "torch_pjrt.vllm.worker.TpuWorker"
        parallel_config.enable_dbo = False

        compilation = vllm_config.compilation_config
        compilation.cudagraph_mode = CUDAGraphMode.NONE
        compilation.cudagraph_capture_sizes = []
        if compilation.mode == CompilationMode.VLLM_COMPILE:
            # vLLM's default (its Inductor pipeline, which has no "tpu" code generation) becomes
            # Fused eager, the tested path.
            compilation.mode = CompilationMode.NONE
        if compilation.mode != CompilationMode.NONE:
            # One Dynamo trace of the whole forward, compiled by the "tpu" backend per shape.
            compilation.mode = CompilationMode.DYNAMO_TRACE_ONCE
            compilation.backend = "tpu"
            # vLLM's AOT path stores the backend's output in AOTAutograd's cache, which takes
            # only Inductor's compiled code; the "tpu" backend keeps its own disk cache.
            os.environ["VLLM_USE_AOT_COMPILE"] = "0"

        cache_config = vllm_config.cache_config
        if cache_config.kv_cache_memory_bytes is None and _on_cpu_plugin() and model_config:
            cache_config.kv_cache_memory_bytes = _cpu_plugin_kv_cache_bytes(vllm_config)
        # Engine processes are started with spawn: a forked child would inherit the parent's
        # PJRT client and its threads.
        os.environ["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
