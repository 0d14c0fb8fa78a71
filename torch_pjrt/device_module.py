"""The `torch.tpu` module: devices, synchronization, random-number state, memory statistics,
streams and events."""

import collections
import contextlib
import dataclasses
import sys
import types

import torch

from . import _C, compiler, eager
from .eager import EagerMode
from .eager import set_eager_mode_scoped as set_eager_mode
from .introspection import (  # noqa: F401 (torch.tpu's private names, as TorchTPU's)
    _clear_cache,
    _get_autocast_dtype,
    _get_cache_hits,
    _get_cache_misses,
    _get_cache_requests,
    _get_cache_stats,
    _get_dump_on_cache_miss,
    _is_autocast_enabled,
    _set_allow_cache,
    _set_autocast_dtype,
    _set_autocast_enabled,
    _set_cache_only,
    _set_dump_on_cache_miss,
    compiled_graph_stablehlo,
    computation_mlir,
    last_program_stablehlo,
    optimized_hlo,
)
from .precision import Precision, precision

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "get_device_name",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
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
    """Makes `device` current. A process of a job that drives one device per process (torchrun,
    mp.spawn: LOCAL_RANK and WORLD_SIZE set at first device use) has "tpu:<LOCAL_RANK>" only, as
    CUDA scripts expect; another index raises IndexError."""
    _C._set_device(_index(device))


def _own_devices():
    """The indices this process drives: all of them, or its LOCAL_RANK in a one-device-per-process
    job (whose device_count() is the host's, LOCAL_WORLD_SIZE)."""
    rank = _C._local_rank()
    return [rank] if rank >= 0 else list(range(device_count()))


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
    """Waits for every computation launched on "tpu" so far (run_stablehlo's programs too); raises
    the error of a failed one."""
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


def _lazy_init():
    """TorchTPU's name for starting the runtime now (init())."""
    init()


def _get_generator(device=None):
    """The default generator of `device` (TorchTPU's name): torch.tpu.default_generators[i]."""
    return sys.modules[__name__].default_generators[_index(device)]


def _is_in_bad_fork():
    """True in a process forked after the device was initialized (the device cannot be used
    there; use the spawn start method)."""
    return _C._in_bad_fork()


# ---- Memory ---------------------------------------------------------------------------------
# The figures are the runtime's accounting of live PJRT buffers (the allocator's DeviceStats, what
# torch.accelerator.memory_* read too): "allocated" counts buffers holding values (tensors'
# contents and results of launched work; deferred values count once computed), "reserved" adds
# the buffers the runtime keeps as caches. The plugin's own statistics, where it reports them,
# are the "device.*" keys of memory_stats().


def memory_stats(device=None):
    """CUDA-style statistics ("allocated_bytes.all.current", ...) plus the plugin's "device.*"."""
    idx = _index(device)
    stats = dict(torch.accelerator.memory_stats(idx))
    stats.update({f"device.{k}": v for k, v in _C._plugin_memory_stats(idx).items()})
    return collections.OrderedDict(sorted(stats.items()))


def memory_allocated(device=None):
    """Bytes of device buffers holding values on `device`."""
    return torch.accelerator.memory_allocated(_index(device))


def max_memory_allocated(device=None):
    return torch.accelerator.max_memory_allocated(_index(device))


def memory_reserved(device=None):
    """memory_allocated plus the bytes of buffers the runtime caches (freed by empty_cache)."""
    return torch.accelerator.memory_reserved(_index(device))


def max_memory_reserved(device=None):
    return torch.accelerator.max_memory_reserved(_index(device))


def reset_peak_memory_stats(device=None):
    torch.accelerator.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device=None):
    torch.accelerator.reset_accumulated_memory_stats(_index(device))


def empty_cache():
    """Frees the device buffers the runtime keeps only as caches (uploaded scalar packs)."""
    torch.accelerator.empty_cache()


def mem_get_info(device=None):
    """(free, total) bytes: from the plugin's bytes_limit and bytes_in_use where it reports them;
    for the CPU plugin, whose device memory is host memory, the host's available and total RAM."""
    return _C._mem_get_info(_index(device))


# ---- Streams and events -----------------------------------------------------------------------
# A device runs the work of all its streams in launch order on one queue (and PJRT orders every
# buffer's readers after its writer), so streams keep CUDA's ordering guarantees without running
# concurrently, and waiting on an event or a stream is always already satisfied. An event is
# complete once all work launched on its device before it finished; elapsed_time is the device
# time between two events, from the completion times of that work.


class Stream(torch.Stream):
    """A "tpu" stream (a torch.Stream). `priority` is accepted and has no effect."""

    def __new__(cls, device=None, priority=0, **kwargs):
        if "stream_id" in kwargs:
            return super().__new__(cls, priority=priority, **kwargs)
        return super().__new__(cls, torch.device("tpu", _index(device)), priority=priority)

    def record_event(self, event=None):
        """Records `event` (a new torch.tpu.Event if None) on this stream and returns it."""
        if event is None:
            event = Event(device=self.device)
        event.record(self)
        return event


class Event(torch.Event):
    """A "tpu" event (a torch.Event): record, query, synchronize, wait, elapsed_time."""

    def __new__(
        cls, enable_timing=False, blocking=False, interprocess=False, external=False, device=None
    ):
        if interprocess or external:
            raise NotImplementedError("tpu: interprocess and external events are not supported")
        return super().__new__(
            cls, torch.device("tpu", _index(device)), enable_timing=enable_timing, blocking=blocking
        )

    def elapsed_time(self, end_event):
        """Milliseconds of device time between this event and `end_event` (both completed)."""
        if not isinstance(end_event, Event):
            raise RuntimeError("expected other to be a torch.tpu.Event object")
        return _C._event_elapsed_time(self.event_id, end_event.event_id)


def _as_stream(s):
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


def current_stream(device=None):
    return _as_stream(torch.accelerator.current_stream(_index(device)))


def default_stream(device=None):
    s = torch.accelerator.current_stream(_index(device))
    return Stream(stream_id=0, device_index=s.device_index, device_type=s.device_type)


def set_stream(stream):
    """Makes `stream` current (and its device the current device); None does nothing."""
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """Context manager that makes `stream` current while it is active; None does nothing."""

    def __init__(self, stream):
        self.stream = stream
        self.src_prev_stream = self.dst_prev_stream = None

    def __enter__(self):
        if self.stream is None:
            return
        self.src_prev_stream = current_stream()
        if self.src_prev_stream.device != self.stream.device:
            self.dst_prev_stream = current_stream(self.stream.device)
        set_stream(self.stream)

    def __exit__(self, *exc):
        if self.stream is None:
            return
        set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)


def stream(stream):
    return StreamContext(stream)


# --- TorchTPU 0.2.0 names: eager modes, precision, mixed precision, generators ----------------

__all__ += [
    "EagerMode",
    "Precision",
    "compiled_graph_stablehlo",
    "computation_mlir",
    "device_of",
    "get_amp_supported_dtype",
    "get_device_properties",
    "is_bf16_supported",
    "last_program_stablehlo",
    "optimized_hlo",
    "precision",
    "set_eager_mode",
]


def get_amp_supported_dtype():
    """The dtypes `torch.autocast("tpu", dtype=...)` accepts (bfloat16 is the default)."""
    return [torch.bfloat16, torch.float16]


def is_bf16_supported(including_emulation=True):
    return True


@dataclasses.dataclass(frozen=True)
class _TpuDeviceProperties:
    name: str  # the plugin's device kind, e.g. "cpu", "NVIDIA H200", "TPU v5 lite"
    total_memory: int  # bytes (mem_get_info's total)
    multi_processor_count: int
    platform: str  # the PJRT platform name: "cpu", "cuda", "tpu"
    index: int


def get_device_properties(device=None):
    """Name, total memory and more of a "tpu" device, from its PJRT plugin."""
    idx = _index(device)
    return _TpuDeviceProperties(
        name=_C._device_kind(idx),
        total_memory=mem_get_info(idx)[1],
        multi_processor_count=1,
        platform=_C._platform_name(),
        index=idx,
    )


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

    def __getattr__(self, name):
        if name == "pallas":  # imports JAX: only on first use
            from . import _pallas_import

            return _pallas_import.load()
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    @property
    def default_generators(self):
        generators = self.__dict__.get("_default_generators")
        if generators is None:
            generators = tuple(_C._default_generator(i) for i in range(device_count()))
            self.__dict__["_default_generators"] = generators
        return generators


sys.modules[__name__].__class__ = _TpuModule
