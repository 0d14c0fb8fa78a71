"""torch.compile(backend="tpu"): Dynamo graphs through aot_autograd (core ATen decompositions) to
one StableHLO program per FX graph and input signature, with in-memory and on-disk caches.

Importing this module registers the backend under the name "tpu"; an installed torch_pjrt also
declares it in the `torch_dynamo_backends` entry point group, so `torch.compile(model,
backend="tpu")` finds it without the import.
"""

import threading
import warnings

import torch
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from torch._dynamo.backends.registry import _BACKENDS, _COMPILER_FNS, register_backend

from .. import _compile_stats
from . import collectives
from .runner import CompiledGraph, clear_memory_cache

__all__ = ["backend", "clear_memory_cache", "counters", "reset_counters"]

_KNOWN_MODES = {None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"}
_noted = set()
_lock = threading.Lock()
_decompositions = None


def _note_once(message):
    with _lock:
        if message in _noted:
            return
        _noted.add(message)
    warnings.warn(message, stacklevel=3)


def _compiler(kind):
    def compile_graph(gm, example_inputs):
        if collectives.has_collectives(gm):
            split = collectives.split(gm, lambda piece: CompiledGraph(piece, kind))

            def run_split(args):
                return split(*args)

            run_split._boxed_call = True
            return run_split
        graph = CompiledGraph(gm, kind)

        def run(args):  # aot_autograd's boxed calling convention: one list of inputs
            return graph(args)

        run._boxed_call = True
        run.graph = graph
        return run

    return compile_graph


def _is_dynamic(example_inputs):
    for a in example_inputs:
        if isinstance(a, torch.SymInt | torch.SymFloat):
            return True
        if isinstance(a, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in a.shape):
            return True
    return False


def backend(gm, example_inputs, mode=None, options=None):
    """The Dynamo backend. `mode` values of torch.compile are accepted: there are no CUDA graphs
    or autotuning to switch on, so every mode compiles the same way (noted once). `options` is
    accepted and ignored (noted once)."""
    global _decompositions
    if mode not in (None, "default"):
        if mode not in _KNOWN_MODES:
            raise ValueError(f'torch.compile(backend="tpu"): unknown mode {mode!r}')
        _note_once(f'torch.compile(backend="tpu"): mode={mode!r} compiles like the default mode')
    if options:
        _note_once(f'torch.compile(backend="tpu"): options {sorted(options)} are ignored')
    if _is_dynamic(example_inputs):
        _note_once(
            'torch.compile(backend="tpu", dynamic=True): programs have static shapes; each new '
            "input shape compiles its own program"
        )
    if _decompositions is None:
        _decompositions = core_aten_decompositions()
    return aot_autograd(
        fw_compiler=_compiler("forward"),
        bw_compiler=_compiler("backward"),
        inference_compiler=_compiler("inference"),
        decompositions=_decompositions,
    )(gm, example_inputs)


def counters():
    """The backend's counters (also in torch_pjrt.metrics.counters()["compile"])."""
    return _compile_stats.snapshot()


def reset_counters():
    _compile_stats.reset()


# Loaded through the entry point, _BACKENDS["tpu"] is that entry point and Dynamo registers the
# backend itself once this import returns; registering here too would be a duplicate.
if "tpu" not in _COMPILER_FNS and _BACKENDS.get("tpu") is None:
    register_backend(name="tpu")(backend)
