"""Debug-mode numerics check: every op run in Debug eager on "tpu" is run again on the CPU with
copies of its inputs, and results that differ beyond a dtype's tolerance are reported.

Enabled for the whole process by TORCH_PJRT_DEBUG_CHECK=1 (ops are checked while the eager mode is
"debug"), or for a block with `torch_pjrt.debug_check()`, which also selects Debug mode. The first
mismatch is reported as a warning naming the op, the output's shape and dtype and the largest
error; every mismatch is kept in `torch_pjrt.debug_checker.mismatches()`. Random ops are not compared: the device generator
draws other numbers than the CPU's by design.
"""

import contextlib
import dataclasses
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from . import eager

# (rtol, atol) per floating dtype; integers and bools must match exactly.
_TOLERANCE = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-3),
    torch.bfloat16: (2e-2, 1e-2),
}


@dataclasses.dataclass
class Mismatch:
    op: str
    output: int
    shape: tuple
    dtype: torch.dtype
    max_abs_error: float
    max_rel_error: float

    def __str__(self):
        return (
            f"{self.op} differs from the CPU: output {self.output} of shape {self.shape} "
            f"{self.dtype}, max abs error {self.max_abs_error:.3g}, "
            f"max rel error {self.max_rel_error:.3g}"
        )


_mismatches: list[Mismatch] = []


def mismatches() -> list[Mismatch]:
    """Every mismatch found so far, oldest first."""
    return list(_mismatches)


def clear() -> None:
    _mismatches.clear()


def _is_tpu(x):
    return isinstance(x, torch.Tensor) and x.device.type == "tpu"


def _to_cpu(x):
    if _is_tpu(x):
        return x.detach().cpu()
    if isinstance(x, torch.device) and x.type == "tpu":
        return torch.device("cpu")
    return x


def _compare(actual, expected):
    """(max abs error, max rel error) when `actual` (tpu) is out of tolerance of `expected`."""
    got = actual.detach().cpu()
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return float("inf"), float("inf")
    if got.numel() == 0:
        return None
    if got.is_complex() or not got.is_floating_point():
        bad = got != expected
        return (1.0, 1.0) if bad.any() else None
    rtol, atol = _TOLERANCE.get(got.dtype, (1e-4, 1e-5))
    g, e = got.double(), expected.double()
    both_nan = g.isnan() & e.isnan()
    same_inf = (g == e) & g.isinf()
    err = (g - e).abs().masked_fill(both_nan | same_inf, 0)
    err = err.nan_to_num(nan=float("inf"))
    if not (err > atol + rtol * e.abs().nan_to_num(0)).any():
        return None
    rel = err / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    return err.max().item(), rel.max().item()


def _written_args(func, args, kwargs):
    """The tensors an op writes in place or into out= (its results even when it returns None)."""
    written = []
    for i, a in enumerate(func._schema.arguments):
        if a.alias_info is not None and a.alias_info.is_write:
            value = kwargs.get(a.name) if a.kwarg_only or i >= len(args) else args[i]
            written.append(value)
    return written


class _Checker(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        if (
            eager.get_eager_mode() != "debug"
            or torch.Tag.nondeterministic_seeded in func.tags
            or not any(_is_tpu(x) for x in flat)
        ):
            return func(*args, **kwargs)
        cpu_args, cpu_kwargs = tree_map(_to_cpu, (args, kwargs))
        out = func(*args, **kwargs)
        try:
            expected = func(*cpu_args, **cpu_kwargs)
        except Exception:  # the CPU rejects what the device accepted: nothing to compare with
            return out
        actual = [out] if out is not None else []
        wanted = [expected] if expected is not None else []
        if out is None:
            actual = _written_args(func, args, kwargs)
            wanted = _written_args(func, cpu_args, cpu_kwargs)
        actual, _ = tree_flatten(actual)
        wanted, _ = tree_flatten(wanted)
        for i, (a, e) in enumerate(zip(actual, wanted)):
            if not (_is_tpu(a) and isinstance(e, torch.Tensor)):
                continue
            errors = _compare(a, e)
            if errors is not None:
                m = Mismatch(str(func), i, tuple(a.shape), a.dtype, *errors)
                if not _mismatches:
                    warnings.warn(f"torch_pjrt debug check: {m}", stacklevel=2)
                _mismatches.append(m)
        return out


_process_checker = None


def _enable_for_process():
    """TORCH_PJRT_DEBUG_CHECK=1: checks every Debug-mode op from now on, on this thread and in the
    autograd work it starts."""
    global _process_checker
    if _process_checker is None:
        _process_checker = _Checker()
        _process_checker.__enter__()


@contextlib.contextmanager
def debug_check():
    """Runs the block in Debug eager mode with every "tpu" op checked against the CPU."""
    with eager.eager_mode("debug"), _Checker():
        yield
