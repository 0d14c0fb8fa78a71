"""At interpreter exit, lets "tpu"'s autograd threads drop their last graph task while Python is
alive.

Since torch 2.13 every backward stashes a Python object (the caller's contextvars) in the
thread-local state its graph task carries. A device's autograd thread can hold the last reference
to a task for a moment after the caller returned (at once when the backward raised there); if the
interpreter is finalizing when it drops it, it cannot take the GIL to release that object and the
process aborts ("terminate called without an active exception"). CUDA's threads share the race.
A backward that does nothing on each device's thread, started from atexit without such an object,
is queued behind whatever that thread still holds, so those references are gone when it returns.
"""

import atexit

import torch
from torch.autograd.variable import Variable

from . import _C


class _Nothing(torch.autograd.Function):
    """A node on the device's autograd thread whose backward runs no op (no program, no compile)."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return None


def _drain():
    if not _C._runtime_started():
        return
    for index in range(_C._device_count()):
        x = torch.empty((), device=f"tpu:{index}", requires_grad=True)
        y = _Nothing.apply(x)
        # The engine directly, not torch.autograd.backward, which would stash the object again.
        Variable._execution_engine.run_backward(
            (y,), (torch.empty_like(y),), False, False, (), True, True
        )


def install():
    atexit.register(_drain)
