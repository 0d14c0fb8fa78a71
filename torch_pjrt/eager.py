"""The eager execution modes of device "tpu": Strict (default), Fused and Debug.

- "strict": each op runs as its own program as soon as it is called (asynchronously).
- "fused": ops accumulate and run as one fused program at sync points (`.item()`, `.cpu()`,
  printing, `torch.tpu.synchronize()`, data-dependent ops, mode switches), at a size cap, and at
  the same point of every repetition of a recognized loop body.
- "debug": each op runs to completion before it returns, so an error is raised at the op that
  caused it. With TORCH_PJRT_DEBUG_CHECK=1 each op is also checked against the CPU.

At start-up TORCH_TPU_DEFER_AND_FUSE=1 selects "fused" and TORCH_TPU_LAUNCH_BLOCKING=1 selects
"debug" (TorchTPU's names), TORCH_PJRT_FUSED_MAX_OPS sets the fusion size cap in ops.
"""

import contextlib
import os

from . import _C

MODES = ("strict", "fused", "debug")


def set_eager_mode(mode: str) -> None:
    """Sets the process-wide eager mode; work pending under the old mode is launched first."""
    _C._set_eager_mode(_check(mode))


def get_eager_mode() -> str:
    """The mode ops called from this thread run in."""
    return _C._get_eager_mode()


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
    if _flag("TORCH_TPU_LAUNCH_BLOCKING"):
        _C._set_eager_mode("debug")
    elif _flag("TORCH_TPU_DEFER_AND_FUSE"):
        _C._set_eager_mode("fused")
