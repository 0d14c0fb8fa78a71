"""The eager execution modes of device "tpu": Strict (default), Fused and Debug.

- "strict": each op runs as its own program as soon as it is called (asynchronously).
- "fused": ops accumulate and run as one fused program at sync points (`.item()`, `.cpu()`,
  printing, `torch.tpu.synchronize()`, data-dependent ops, mode switches), at a size cap, and at
  the same point of every repetition of a recognized loop body.
- "debug": each op runs to completion before it returns, so an error is raised at the op that
  caused it. With TORCH_PJRT_DEBUG_CHECK=1 each op is also checked against the CPU.

At start-up TORCH_TPU_DEFER_AND_FUSE=1 selects "fused" and TORCH_TPU_LAUNCH_BLOCKING=1 selects
"debug" (TorchTPU's names), TORCH_PJRT_FUSED_MAX_OPS sets the fusion size cap in ops and
TORCH_PJRT_PROGRAM_CACHE_SIZE the most compiled eager programs kept (least recently used evicted).
"""

import contextlib
import enum
import os

from . import _C

MODES = ("strict", "fused", "debug")


class EagerMode(enum.Enum):
    """TorchTPU's names of the eager modes (`torch.tpu.EagerMode`)."""

    DEFER_AND_FUSE = "fused"
    DEFER_NEVER = "strict"
    DEFER_NEVER_AND_LAUNCH_BLOCKING = "debug"


class set_eager_mode_scoped:
    """`torch.tpu.set_eager_mode(mode)`: sets the process-wide mode (an EagerMode or a mode name)
    at once; used as a context manager, restores the previous process-wide mode on exit, also when
    the block raises."""

    def __init__(self, mode):
        name = mode.value if isinstance(mode, EagerMode) else _check(mode)
        self._previous = _C._get_default_eager_mode()
        _C._set_eager_mode(name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_eager_mode(self._previous)
        return False


def get_eager_mode_enum() -> EagerMode:
    """`torch.tpu.eager_mode`: the mode ops called from this thread run in."""
    return EagerMode(get_eager_mode())


def set_eager_mode_enum(mode) -> None:
    set_eager_mode_scoped(mode)


def set_eager_mode(mode: str) -> None:
    """Sets the process-wide eager mode; work pending under the old mode is launched first."""
    _C._set_eager_mode(_check(mode))


def get_eager_mode() -> str:
    """The mode ops called from this thread run in."""
    return _C._get_eager_mode()


def launch_pending() -> None:
    """Launches the work Fused mode has deferred so far, without waiting for it: what follows
    starts a new program. A caller cuts a step this way where the ops before and after depend on
    different shapes, so that each part's program is reused on its own."""
    _C._launch_pending()


@contextlib.contextmanager
def eager_mode(mode: str):
    """Runs the block in `mode` on this thread (and in the autograd work it starts)."""
    _C._push_eager_mode(_check(mode))
    try:
        yield
    finally:
        _C._pop_eager_mode()


def _check(mode):
    if not isinstance(mode, str):
        raise TypeError(f"eager mode must be a str, got {type(mode).__name__}")
    if mode not in MODES:
        raise ValueError(f'eager mode must be "strict", "fused" or "debug", got "{mode}"')
    return mode


def _flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _configure_from_environment():
    limit = os.environ.get("TORCH_PJRT_FUSED_MAX_OPS")
    if limit:
        _C._set_fusion_max_ops(int(limit))
    programs = os.environ.get("TORCH_PJRT_PROGRAM_CACHE_SIZE")
    if programs:
        if not programs.isdigit() or int(programs) < 1:
            raise ValueError(
                f"TORCH_PJRT_PROGRAM_CACHE_SIZE must be a positive integer, got {programs!r}"
            )
        _C._set_program_cache_capacity(int(programs))
    if _flag("TORCH_TPU_LAUNCH_BLOCKING"):
        _C._set_eager_mode("debug")
    elif _flag("TORCH_TPU_DEFER_AND_FUSE"):
        _C._set_eager_mode("fused")
