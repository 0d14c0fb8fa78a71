"""torch_pjrt: PyTorch device "tpu" over the OpenXLA PJRT C API.

Importing this package (which `import torch` does through the `torch.backends` entry point) renames
PyTorch's PrivateUse1 backend to "tpu", registers the `torch.tpu` module, and configures the PJRT
plugin named by TORCH_PJRT_PLUGIN (a name: tpu, cuda, cpu; or a path), found otherwise in the order
TPU, CUDA, CPU, with its create options (`torch_pjrt.plugins`). The plugin is loaded on first use.
"""

__version__ = "0.1.0"

import os
import site
import sys


def _autoload():
    """Entry point of the `torch.backends` group: importing the package does the work.

    Defined before `import torch`, which looks it up while this module is still initializing
    when the package is imported first (e.g. `python -m torch_pjrt.info`)."""


import torch

from . import _C

_BACKEND = "tpu"


def _search_dirs():
    dirs = list(site.getsitepackages())
    user = site.getusersitepackages()
    dirs += [user] if isinstance(user, str) else list(user)
    dirs += [p for p in sys.path if p and os.path.isdir(p)]
    return list(dict.fromkeys(dirs))


def _register():
    if torch._C._get_privateuse1_backend_name() != _BACKEND:
        torch.utils.rename_privateuse1_backend(_BACKEND)
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )
    from . import compiler, device_module, legacy_storage, plugins, profiler

    if not hasattr(torch, _BACKEND):
        for name, cls in legacy_storage.classes().items():  # torch.tpu.FloatStorage, ...
            setattr(device_module, name, cls)
        torch._register_device_module(_BACKEND, device_module)
        sys.modules[f"torch.{_BACKEND}.compiler"] = compiler
        sys.modules[f"torch.{_BACKEND}.profiler"] = profiler
        device_module.compiler = compiler
        device_module.profiler = profiler
    plugins.configure(_search_dirs(), __version__)
    # Again at first device use (before the client exists), from the environment then: a worker
    # of torch.multiprocessing.spawn sets its launch variables after this import.
    _C._set_configure_hook(lambda: plugins.configure(_search_dirs(), __version__))
    from . import distributed  # the c10d backend "tpu_dist"; torch.tpu.distributed

    sys.modules[f"torch.{_BACKEND}.distributed"] = distributed
    device_module.distributed = distributed
    compiler._apply()  # the default options (allow_excess_precision off, or from XLA_FLAGS)
    # The autocast dtype of "tpu" is bfloat16 (PyTorch's per-thread default for a new backend is
    # float16); autocast state travels with PyTorch's thread-local state into autograd threads.
    torch.set_autocast_dtype(_BACKEND, torch.bfloat16)


_register()

from . import (
    _default_backend,
    _dynamo_device,
    _exit_drain,
    _integrations,
    _pallas_import,
    _safetensors,
    debug_checker,
    eager,
    eager_checkpointing,
    metrics,
)
from ._kernel_ops import TensorSpec
from .custom_program import run_stablehlo
from .debug_checker import debug_check
from .eager import eager_mode, get_eager_mode, launch_pending, set_eager_mode
from .stablehlo_ops import stablehlo_op

eager._configure_from_environment()
_safetensors.install()
_pallas_import.install()
_dynamo_device.install()  # Dynamo's and Inductor's answers for "tpu", when they are imported
_default_backend.install()  # torch.compile with no backend: "tpu" for "tpu" tensors
_exit_drain.install()  # autograd device threads drop their last graph task before finalization
eager_checkpointing.install()  # torch.utils.checkpoint's recomputation behind a barrier (Fused)
_integrations.install()  # Accelerate's device choice and the rest, when they are imported
if eager._flag("TORCH_PJRT_DEBUG_CHECK"):
    debug_checker._enable_for_process()

__all__ = [
    "TensorSpec",
    "debug_check",
    "debug_checker",
    "eager_mode",
    "get_eager_mode",
    "launch_pending",
    "metrics",
    "run_stablehlo",
    "set_eager_mode",
    "stablehlo_op",
]
