"""The `torch.tpu` module: devices, synchronization and random-number state."""

import contextlib
import sys
import types

import torch

from . import _C, compiler, eager
from .eager import EagerMode
from .eager import set_eager_mode_scoped as set_eager_mode
from .precision import Precision, precision

__all__ = [
    "current_device",
    "device",
    "device_count",
    "get_device_name",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "synchronize",
]


def init():
    """Starts the PJRT runtime now; raises RuntimeError when the plugin cannot be loaded."""
    _C._init()


def is_initialized():
    return _C._device_count() > 0


def is_available():
    return _C._device_count() > 0


def device_count():
    return _C._device_count()


def current_device():
    return _C._current_device()


def _index(device):
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "tpu":
        raise ValueError(f"Expected a tpu device, but got: {device}")
    return current_device() if device.index is None else device.index


def set_device(device):
    _C._set_device(_index(device))


class device(contextlib.ContextDecorator):
    """Context manager that makes `device` the current "tpu" device while it is active."""

    def __init__(self, device):
        self.idx = _index(device) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev_idx >= 0:
            set_device(self.prev_idx)
        return False


def synchronize(device=None):
    """Waits for every computation launched on "tpu" so far; raises the error of a failed one."""
    _C._synchronize()


def get_device_name(device=None):
    """Names the device kind, the PJRT plugin's platform and the plugin file."""
    idx = _index(device)
    return f"{_C._device_kind(idx)} ({_C._platform_name()} PJRT plugin {_C._plugin_path()})"


def _generator(device=None):
    return _C._default_generator(_index(device))


def manual_seed(seed):
    _generator().manual_seed(int(seed))


def manual_seed_all(seed):
    for i in range(device_count()):
        _C._default_generator(i).manual_seed(int(seed))


def seed():
    _generator().seed()


def seed_all():
    for i in range(device_count()):
        _C._default_generator(i).seed()


def initial_seed():
    return _generator().initial_seed()


def get_rng_state(device="tpu"):
    return _generator(device).get_state()


def set_rng_state(new_state, device="tpu"):
    _generator(device).set_state(new_state)


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def _is_in_bad_fork():
    return False


# --- TorchTPU 0.2.0 names: eager modes, precision, mixed precision, generators ----------------

__all__ += [
    "EagerMode",
    "Precision",
    "device_of",
    "get_amp_supported_dtype",
    "is_bf16_supported",
    "precision",
    "set_eager_mode",
]


def get_amp_supported_dtype():
    """The dtypes `torch.autocast("tpu", dtype=...)` accepts (bfloat16 is the default)."""
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation=True):
    return True


class device_of(device):
    """Makes the device of tensor `obj` current while active; a no-op for a non-"tpu" tensor."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.device.type == "tpu" else None)


class _TpuModule(types.ModuleType):
    """`torch.tpu` with TorchTPU's module properties: `eager_mode` and `allow_excess_precision`
    (get and set), and `default_generators` (one generator per device, a stable tuple)."""

    @property
    def eager_mode(self):
        return eager.get_eager_mode_enum()

    @eager_mode.setter
    def eager_mode(self, mode):
        eager.set_eager_mode_enum(mode)

    @property
    def allow_excess_precision(self):
        return compiler.get_allow_excess_precision()

    @allow_excess_precision.setter
    def allow_excess_precision(self, value):
        compiler.set_allow_excess_precision(value)

    @property
    def default_generators(self):
        generators = self.__dict__.get("_default_generators")
        if generators is None:
            generators = tuple(_C._default_generator(i) for i in range(device_count()))
            self.__dict__["_default_generators"] = generators
        return generators


sys.modules[__name__].__class__ = _TpuModule
