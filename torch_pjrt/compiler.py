"""XLA compile options for "tpu" programs: `torch.tpu.compiler.custom_compiler_options` and
`torch.tpu.allow_excess_precision`.

Options are XLA `DebugOptions` fields by name (e.g. `xla_cpu_enable_fast_math`,
`xla_gpu_enable_triton_gemm`), sent with every compilation while active; the plugin rejects a
name it does not know when it compiles. Two keys are special: `xla_optimization_level` and
`xla_memory_fitting_level` take "O0".."O3" (XLA's effort levels). Entering or leaving a block is
a sync point: pending work compiles with the options it was recorded under. The options are part
of every program-cache key, so changing them compiles anew rather than reusing a program.
"""

import contextlib
import os
import re

from . import _C

_EFFORT_KEYS = ("xla_optimization_level", "xla_memory_fitting_level")
_stack = []
_excess_precision = None  # None until first read: then XLA_FLAGS decides


def _flag_from_xla_flags():
    match = re.search(r"--xla_allow_excess_precision(?:=(\w+))?", os.environ.get("XLA_FLAGS", ""))
    if match is None:
        return False
    return (match.group(1) or "true").lower() in ("true", "1")


def get_allow_excess_precision() -> bool:
    global _excess_precision
    if _excess_precision is None:
        _excess_precision = _flag_from_xla_flags()
    return _excess_precision


def set_allow_excess_precision(value: bool) -> None:
    """Whether XLA may keep bfloat16/float16 intermediates of a fused program in higher precision
    (skipping roundings PyTorch performs after each op). False by default, so fused programs round
    as eager PyTorch does, unless XLA_FLAGS sets --xla_allow_excess_precision."""
    global _excess_precision
    if not isinstance(value, bool):
        raise TypeError(f"allow_excess_precision must be a bool, got {type(value).__name__}")
    _excess_precision = value
    _apply()


def _merged():
    merged = {}
    for options in _stack:
        merged.update(options)
    return merged


def _apply():
    overrides = _merged()
    levels = {key: overrides.pop(key, "") for key in _EFFORT_KEYS}
    overrides["xla_allow_excess_precision"] = get_allow_excess_precision()
    _C._set_compile_options(
        overrides,
        optimization_level=levels["xla_optimization_level"],
        memory_fitting_level=levels["xla_memory_fitting_level"],
    )


def _check(options):
    if not isinstance(options, dict):
        raise TypeError(f"custom_compiler_options expects a dict, got {type(options).__name__}")
    for key, value in options.items():
        if not isinstance(key, str):
            raise TypeError(f"compiler option names must be str, got {key!r}")
        if not isinstance(value, (bool, int, float, str)):
            raise TypeError(
                f'compiler option "{key}" must be a bool, int, float or str, got '
                f"{type(value).__name__}"
            )
        if key in _EFFORT_KEYS and value not in ("O0", "O1", "O2", "O3"):
            raise ValueError(
                f'compiler option "{key}" must be one of O0, O1, O2, O3, got {value!r}'
            )
    return dict(options)


@contextlib.contextmanager
def custom_compiler_options(options):
    """Compiles every "tpu" program materialized inside the block with these XLA options.
    Nested blocks merge, the inner one winning."""
    _stack.append(_check(options))
    try:
        _apply()
        yield
    finally:
        _stack.pop()
        _apply()


def current_options():
    """The options programs compile with now (merged blocks), effort levels included."""
    return dict(_merged(), xla_allow_excess_precision=get_allow_excess_precision())
