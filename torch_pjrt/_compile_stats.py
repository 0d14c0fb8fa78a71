"""Counters of the torch.compile backend "tpu" (kept apart from torch_pjrt.compile so that reading
them never imports torch._dynamo)."""

import threading

_lock = threading.Lock()
_ZERO = {
    "graphs_compiled": 0,  # FX graph x input signature traced into one program
    "shape_recompiles": 0,  # of those, a new input signature for an FX graph already compiled
    "xla_compiles": 0,  # programs compiled by the plugin (memory and disk caches both missed)
    "memory_hits": 0,  # programs found in the in-memory cache (same structural key)
    "disk_hits": 0,  # programs loaded from the on-disk cache
    "disk_writes": 0,  # programs written to the on-disk cache
    "disk_errors": 0,  # unreadable, corrupt or unloadable cache files (ignored and replaced)
    "aot_hits": 0,  # Dynamo graphs whose AOTAutograd result (with our graphs) loaded from disk
    "aot_misses": 0,  # Dynamo graphs looked up on disk and not found, so traced by AOTAutograd
    "aot_writes": 0,  # AOTAutograd results written to disk
    "aot_bypasses": 0,  # Dynamo graphs AOTAutograd's cache cannot hold (traced in every process)
    "aot_errors": 0,  # corrupt AOTAutograd cache files (deleted)
    "dynamo_saves": 0,  # writes of Dynamo's precompile entries (compile/dynamo_cache.py)
    "eager_graphs": 0,  # FX graph x signature run eagerly instead (see the one-time warning)
    "replays": 0,  # calls served by a compiled program without running Python per op
    "evictions": 0,
    "recompute_barriers": 0,  # optimization barriers put before recomputed checkpoint regions  # signatures dropped past TORCH_PJRT_PROGRAM_CACHE_SIZE (least recently used)
    "trace_seconds": 0.0,  # running FX graphs in trace mode
    "compile_seconds": 0.0,  # plugin compilation plus cache loads
}
_counters = dict(_ZERO)


def add(name, value=1):
    with _lock:
        _counters[name] += value


def snapshot():
    with _lock:
        return dict(_counters)


def reset():
    with _lock:
        _counters.clear()
        _counters.update(_ZERO)
