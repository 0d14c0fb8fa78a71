"""vLLM worker for device "tpu": binds its rank to a device, starts the distributed groups
(`tpu_dist`), puts the process in Fused eager mode, builds the model runner and runs the start-up
walk over the padded step shapes (warmup.py). Memory figures
come from `torch.accelerator` (torch.tpu's allocator statistics and the plugin's memory info), as
on CUDA."""

import gc
import os
from contextlib import nullcontext

import torch
from vllm.platforms import current_platform
from vllm.utils.mem_utils import MemorySnapshot
from vllm.utils.torch_utils import set_random_seed
from vllm.v1.worker.gpu_worker import Worker, init_worker_distributed_environment
from vllm.v1.worker.utils import request_memory
from vllm.v1.worker.worker_base import CompilationTimes
from vllm.v1.worker.workspace import init_workspace_manager

import torch_pjrt

from .warmup import warm_up


class TpuWorker(Worker):
    def _maybe_get_memory_pool_context(self, tag):
        return nullcontext()  # no sleep mode: vLLM refuses it for this platform

    def init_device(self):
        # The out-of-tree MoE method and quantized linear kernels, registered before the model
        # is built. Not from the platform's import_kernels, which vLLM calls while its fused_moe
        # package is half imported.
        from . import moe, quant, quant_int  # noqa: F401

        parallel_config = self.parallel_config
        if parallel_config.data_parallel_size > 1:
            dp_local_rank = parallel_config.data_parallel_rank_local
            if dp_local_rank is None:
                dp_local_rank = parallel_config.data_parallel_index
            tp_pp = parallel_config.pipeline_parallel_size * parallel_config.tensor_parallel_size
            self.local_rank += dp_local_rank * tp_pp
        count = torch.accelerator.device_count()
        if self.local_rank >= count:
            raise RuntimeError(
                f'vLLM worker rank {self.local_rank} needs device "tpu:{self.local_rank}", but '
                f"{count} tpu devices are visible"
            )
        self.device = torch.device("tpu", self.local_rank)
        torch.accelerator.set_device_index(self.device)
        current_platform.check_if_supports_dtype(self.model_config.dtype)
        torch_pjrt.set_eager_mode("fused")
        # No automatic cuts: the model runner launches each part of a step itself, and the
        # policy's loop detection (a model's layers repeat) would cut a forward at places that
        # depend on the steps before it, each a program of its own.
        torch_pjrt._C._set_fusion_max_ops(0)
        # A restarted server loads the programs it compiled before (TORCH_PJRT_CACHE_DIR).
        os.environ.setdefault("TORCH_PJRT_EAGER_DISK_CACHE", "1")

        init_worker_distributed_environment(
            self.vllm_config,
            self.rank,
            self.distributed_init_method,
            self.local_rank,
            current_platform.dist_backend,
        )
        set_random_seed(self.model_config.seed)
        gc.collect()
        torch.accelerator.empty_cache()
        self.init_snapshot = MemorySnapshot(device=self.device)
        if self.cache_config.kv_cache_memory_bytes is None:  # else the size is the user's
            self.requested_memory = request_memory(self.init_snapshot, self.cache_config)
        init_workspace_manager(self.device, 1)

        from .model_runner import TpuModelRunner

        self.model_runner = TpuModelRunner(self.vllm_config, self.device)

    def compile_or_warm_up_model(self) -> CompilationTimes:
        """Runs the start-up walk (warmup.py): a real step for each padded shape, so serving
        compiles nothing afterwards; from the disk cache on a restart. TORCH_PJRT_VLLM_WARMUP=0
        skips it: each shape then compiles when a step first meets it."""
        self.model_runner.maybe_remove_all_loras(self.model_runner.lora_config)
        if os.environ.get("TORCH_PJRT_VLLM_WARMUP", "1") != "0":
            warm_up(self)
        set_random_seed(self.model_config.seed)
        return CompilationTimes(
            language_model=self.compilation_config.compilation_time,
            encoder=self.compilation_config.encoder_compilation_time,
        )
