"""What runs on "tpu", in-process: the StableHLO of pending work, of the last eager program and of
compiled graphs, as strings, and the plugin's optimized HLO of any of them; the program caches' counters and controls (TorchTPU's
torch.tpu._*cache* names, dumping on a cache miss included); torch.tpu's autocast helpers."""

import glob
import os
import tempfile

import torch

from . import _C, _compile_stats

__all__ = [
    "compiled_graph_stablehlo",
    "computation_mlir",
    "last_program_stablehlo",
    "optimized_hlo",
]


def computation_mlir(*tensors):
    """The StableHLO of the program that would compute the pending values of `tensors` now (in
    Fused mode, the work accumulated for them; in any mode, "" for tensors already computed).
    Nothing runs. TorchTPU's name (its `_internal.sync.computation_mlir`)."""
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.device.type != "tpu":
            raise TypeError(f"computation_mlir: expected tpu tensors, got {_describe(t)}")
    return _C._stablehlo_of(list(tensors))


def _describe(x):
    return f"a tensor on {x.device}" if isinstance(x, torch.Tensor) else type(x).__name__


def last_program_stablehlo(with_ops=False):
    """The StableHLO of the last eager program launched (Strict mode: the last op's; Fused mode:
    the last fused program), "" before the first. With `with_ops=True`, a pair (text, the
    names of its ops)."""
    text, ops = _C._last_program()
    return (text, ops) if with_ops else text


def compiled_graph_stablehlo():
    """{name: StableHLO} of the graphs torch.compile(backend="tpu") compiled in this process (the
    64 most recent, oldest first). A name is "compiled graph_<id>_<forward|backward|inference>",
    the name profiles show; a graph compiled again for a new input shape keeps the newest text."""
    from .compile import runner

    return runner.graph_texts()


def optimized_hlo(stablehlo):
    """The HLO text of `stablehlo` (a program's StableHLO, e.g. from last_program_stablehlo(),
    compiled_graph_stablehlo() or computation_mlir()) after the plugin's optimizations: fusions,
    layouts and the rest of what XLA made of it. The program is compiled again with the current
    compile options plus XLA's dump options (xla_dump_to, xla_dump_hlo_as_text), and the
    "*after_optimizations.txt" module the plugin writes is returned; nothing runs."""
    from .compiler import custom_compiler_options

    if not isinstance(stablehlo, str) or not stablehlo.strip():
        raise ValueError("optimized_hlo: expected a program's StableHLO text")
    with tempfile.TemporaryDirectory(prefix="torch_pjrt_hlo_") as folder:
        dump = {"xla_dump_to": folder, "xla_dump_hlo_as_text": True}
        with custom_compiler_options(dump):
            _C._compile_stablehlo(stablehlo)
        found = sorted(glob.glob(os.path.join(folder, "*after_optimizations.txt")))
        if not found:
            raise RuntimeError(
                f"optimized_hlo: the PJRT plugin {_C._plugin_path()} wrote no optimized HLO "
                "(it ignores XLA's xla_dump_to option)"
            )
        with open(found[-1]) as f:
            return f.read()


# ---- Compilation caches: the eager program cache and compiled graphs' programs ----------------


def _parts():
    c = _C._counters()
    g = _compile_stats.snapshot()
    eager_lookups = c["cache_hits"] + _C._program_cache_misses()
    eager_hits = c["cache_hits"] + c["disk_hits"]
    graph_hits = g["memory_hits"] + g["disk_hits"]
    return c, g, eager_lookups, eager_hits, graph_hits


def _get_cache_requests():
    """Programs looked up: eager programs and compiled graphs' programs."""
    _, g, eager_lookups, _, graph_hits = _parts()
    return eager_lookups + graph_hits + g["xla_compiles"]


def _get_cache_hits():
    """Lookups served without compiling (from memory or from the disk cache)."""
    _, _, _, eager_hits, graph_hits = _parts()
    return eager_hits + graph_hits


def _get_cache_misses():
    """Lookups that compiled a program."""
    return _get_cache_requests() - _get_cache_hits()


def _get_cache_stats():
    """TorchTPU's keys (num_cache_reqs, num_cache_hits, num_cache_misses, num_compilations,
    compilation_duration in seconds, cache_only, allow_cache) plus cached_programs (eager
    programs held now) and the split into "eager" and "compiled_graphs"."""
    c, g, eager_lookups, eager_hits, graph_hits = _parts()
    reqs = eager_lookups + graph_hits + g["xla_compiles"]
    hits = eager_hits + graph_hits
    return {
        "num_cache_reqs": reqs,
        "num_cache_hits": hits,
        "num_cache_misses": reqs - hits,
        "num_compilations": c["compiles"],
        "compilation_duration": c["compile_seconds"],
        "cache_only": _C._cache_only(),
        "allow_cache": _allow_cache_capacity is None,
        "cached_programs": _C._cached_programs(),
        "eager": {"requests": eager_lookups, "hits": eager_hits},
        "compiled_graphs": {"requests": graph_hits + g["xla_compiles"], "hits": graph_hits},
    }


def _clear_cache():
    """Forgets every cached eager program and compiled-graph program (they compile again when
    next needed; graphs already compiled for a signature keep theirs)."""
    from .compile import runner

    _C._clear_program_cache()
    runner.clear_memory_cache()


def _set_cache_only(enabled):
    """While True, a program that would be compiled raises RuntimeError instead ("the user has
    asserted that no more compilation should happen"): every program needed must be cached."""
    _C._set_cache_only(bool(enabled))


_allow_cache_capacity = None  # the capacity to restore while caching is off


def _set_allow_cache(enabled):
    """False: programs are not kept (each eager op and graph signature compiles anew); True
    restores the cache's capacity."""
    global _allow_cache_capacity
    if not enabled and _allow_cache_capacity is None:
        _allow_cache_capacity = _C._program_cache_capacity()
        _C._set_program_cache_capacity(0)
    elif enabled and _allow_cache_capacity is not None:
        _C._set_program_cache_capacity(_allow_cache_capacity)
        _allow_cache_capacity = None


_dump_dir = None  # _set_dump_on_cache_miss's directory ("": off); None: TORCH_PJRT_DUMP_DIR's


def dump_dir():
    """The directory programs are dumped to now, or None: _set_dump_on_cache_miss's, else
    TORCH_PJRT_DUMP_DIR."""
    return (os.environ.get("TORCH_PJRT_DUMP_DIR") if _dump_dir is None else _dump_dir) or None


def _set_dump_on_cache_miss(enabled, dump_dir=None):
    """True: from now on, the StableHLO of each program a cache misses is written to `dump_dir`
    (default TORCH_PJRT_DUMP_DIR, else <tmp>/torch_pjrt_dump_<pid>), as TORCH_PJRT_DUMP_DIR does
    from the start: each eager program compiled (found neither in the program cache nor on disk)
    as eager-<n>.mlir, each compiled graph at a new input signature as graph_*.stablehlo.mlir
    (with its FX graph, graph_*.fx.txt). Returns the directory. False stops it."""
    global _dump_dir
    if not enabled:
        _dump_dir = ""
        _C._set_dump_dir("")
        return None
    folder = dump_dir or os.environ.get("TORCH_PJRT_DUMP_DIR")
    if not folder:
        folder = os.path.join(tempfile.gettempdir(), f"torch_pjrt_dump_{os.getpid()}")
    folder = os.path.abspath(folder)
    os.makedirs(folder, exist_ok=True)
    _dump_dir = folder
    _C._set_dump_dir(folder)
    return folder


def _get_dump_on_cache_miss():
    """Whether programs are dumped on a cache miss (_set_dump_on_cache_miss, TORCH_PJRT_DUMP_DIR)."""
    return dump_dir() is not None


# ---- Autocast helpers (TorchTPU's torch.tpu._*autocast*) --------------------------------------


def _is_autocast_enabled():
    return torch.is_autocast_enabled("tpu")


def _set_autocast_enabled(enabled):
    torch.set_autocast_enabled("tpu", bool(enabled))


def _get_autocast_dtype():
    """The dtype autocast("tpu") casts to (bfloat16 unless set)."""
    return torch.get_autocast_dtype("tpu")


def _set_autocast_dtype(dtype):
    """Sets the dtype autocast("tpu") uses when none is given; it must be one of
    torch.tpu.get_amp_supported_dtype()."""
    from .device_module import get_amp_supported_dtype

    supported = get_amp_supported_dtype()
    if dtype not in supported:
        raise ValueError(
            f"tpu autocast: unsupported dtype {dtype}; supported: "
            + ", ".join(str(d) for d in supported)
        )
    torch.set_autocast_dtype("tpu", dtype)
