"""Matmul and convolution precision on "tpu" (TorchTPU's `torch.tpu.Precision` / `precision`).

Each float32 matrix product and convolution is recorded with a StableHLO precision: DEFAULT lets
the hardware use its fastest passes (one bfloat16 pass on TPU, TF32 on NVIDIA GPUs), HIGH uses
more (three bfloat16 passes on TPU), HIGHEST computes in full float32. The setting comes from the
innermost `torch.tpu.precision(...)` block of the thread (and of the backward passes it runs),
else from `torch.set_float32_matmul_precision`: "highest" (PyTorch's default, so results match
the CPU) -> HIGHEST, "high" -> HIGH, "medium" -> DEFAULT. XLA:CPU computes float32 exactly at any
setting. Lower-precision dtypes (bfloat16, float16) are unaffected.
"""

import contextlib
import enum

from . import _C


class Precision(enum.IntEnum):
    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


def current_precision() -> Precision:
    """The precision float32 products recorded now on this thread get."""
    return Precision(_C._matmul_precision())


@contextlib.contextmanager
def precision(mode: Precision):
    """Runs the block's float32 matrix products and convolutions at `mode`, overriding
    `torch.set_float32_matmul_precision` on this thread."""
    if not isinstance(mode, Precision):
        raise ValueError(
            f"torch.tpu.precision expects a torch.tpu.Precision (DEFAULT, HIGH, HIGHEST), got {mode!r}"
        )
    _C._push_precision(int(mode))
    try:
        yield
    finally:
        _C._pop_precision()
