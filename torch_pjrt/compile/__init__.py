"""torch.compile(backend="tpu"): Dynamo graphs through aot_autograd (core ATen decompositions) to
one StableHLO program per FX graph and input signature, with in-memory and on-disk caches; a new
process finds each graph's AOTAutograd result on disk too (warm_start), and with torch's
precompile cache on, Dynamo's (dynamo_cache).

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
from torch._functorch.aot_autograd import SerializableAOTDispatchCompiler

from .. import _compile_stats
from . import checkpointing, dynamo_cache, optimizers, warm_start
from .runner import clear_memory_cache

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


def _compilers():
    """aot_autograd's forward, backward and inference compilers. With the warm start on they are
    SerializableAOTDispatchCompilers, which makes aot_autograd look up and fill its cache; new ones
    per call, as aot_autograd wraps the backward compiler it is given."""
    cache = warm_start.enabled()

    def compiler(kind):
        def compile_graph(gm, example_inputs):
            if kind == "backward":
                _compile_stats.add("recompute_barriers", checkpointing.add_recompute_barriers(gm))
            return warm_start.TpuOutputCode(gm, kind)

        if cache:
            return SerializableAOTDispatchCompiler(warm_start.TpuOutputCode, compile_graph)
        return compile_graph

    return compiler("forward"), compiler("backward"), compiler("inference")


def _is_dynamic(example_inputs):
    for a in example_inputs:
        if isinstance(a, torch.SymInt | torch.SymFloat):
            return True
        if isinstance(a, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in a.shape):
            return True
    return False


def _decomposition_table():
    """Core ATen's decompositions, less the ops lowered whole: _safe_softmax (the softmax of
    scaled_dot_product_attention) reuses its softmax's reductions to find the rows that mask out
    every key, where the decomposition compares each score with -inf and reduces once more."""
    table = core_aten_decompositions()
    del table[torch.ops.aten._safe_softmax.default]
    return table


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
        _decompositions = _decomposition_table()
    forward, backward, inference = _compilers()
    compile_fn = aot_autograd(
        fw_compiler=forward,
        bw_compiler=backward,
        inference_compiler=inference,
        decompositions=_decompositions,
        # In-place updates of inputs (an optimizer's parameters and states) stay in the program,
        # which then writes them in place (donating the old buffers), instead of aot_autograd's
        # epilogue copying each result back with an eager copy_.
        keep_inference_input_mutations=True,
    )
    if not isinstance(forward, SerializableAOTDispatchCompiler):
        return compile_fn(gm, example_inputs)
    with warm_start.scope(mode, options):
        compiled = compile_fn(gm, example_inputs)
    dynamo_cache.compiled()
    return compiled


def counters():
    """The backend's counters (also in torch_pjrt.metrics.counters()["compile"])."""
    return _compile_stats.snapshot()


def reset_counters():
    _compile_stats.reset()


# Loaded through the entry point, _BACKENDS["tpu"] is that entry point and Dynamo registers the
# backend itself once this import returns; registering here too would be a duplicate.
if "tpu" not in _COMPILER_FNS and _BACKENDS.get("tpu") is None:
    register_backend(name="tpu")(backend)
dynamo_cache.install()  # before Dynamo looks for a compiled function's entry
optimizers.install()  # before Dynamo traces an optimizer step
