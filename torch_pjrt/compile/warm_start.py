"""Warm start of torch.compile(backend="tpu") across processes: AOTAutograd's own on-disk cache
(AOTAutogradCache, in its bundled form) keeps each Dynamo graph's AOTAutograd result together with
the backend's compiled graphs (TpuOutputCode: the ATen FX graph, which a new process traces into
its program again, the program itself then coming from the program disk cache).

AOTAutogradCache keys an entry by the Dynamo graph, its inputs' metadata, torch and the
AOTAutograd/Inductor configuration; what else a result depends on (torch_pjrt's code, the plugin,
the compile options and the torch.compile mode and options) names the folder the entries live in:
`$TORCH_PJRT_CACHE_DIR/aot/<digest>/`. A file whose bytes no longer match its name (AOTAutogradCache
names each entry by a hash of its bytes) is deleted with a warning and is a miss.

Dynamo's own tracing is cached only where torch's precompile can package it (inference
functions, opt-in: dynamo_cache.py); it cannot package graphs that hold an optimizer's parameters
("static addresses"), i.e. training steps.

TORCH_PJRT_AOT_CACHE=0 turns this level off (programs are still cached on disk).
"""

import contextlib
import os
import threading
import warnings

import torch
from torch._dynamo.utils import counters as dynamo_counters
from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache
from torch._inductor.codecache import sha256_hash
from torch._inductor.output_code import OutputCode

from .. import _compile_stats as stats
from .. import cache as disk_cache
from . import collectives, dynamo_cache
from .cache_key import digest
from .runner import CompiledGraph

_lock = threading.Lock()
_verified = set()  # folders whose entries were checked in this process


def enabled():
    value = os.environ.get("TORCH_PJRT_AOT_CACHE", "1").strip().lower()
    return value not in ("0", "off", "false", "no") and disk_cache.cache_dir() is not None


def folder(mode, options):
    """The folder of the entries this process can use with this mode, options and compile
    options."""
    return os.path.join(
        disk_cache.cache_dir(), "aot", digest(repr(mode), repr(sorted((options or {}).items())))
    )


def _verify(directory):
    """Deletes, with a warning, every entry whose bytes do not hash to its name (truncated or
    damaged), once per folder and process."""
    with _lock:
        if directory in _verified:
            return
        _verified.add(directory)
    root = os.path.join(directory, "aotautograd")
    if not os.path.isdir(root):
        return
    for key in os.listdir(root):
        sub = os.path.join(root, key)
        if not os.path.isdir(sub):
            continue
        for name in os.listdir(sub):
            if name.startswith("."):
                continue  # a temporary file of a write in progress
            path = os.path.join(sub, name)
            try:
                with open(path, "rb") as f:
                    good = sha256_hash(f.read()) == name
            except OSError:
                good = False
            if not good:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                stats.add("aot_errors")
                warnings.warn(
                    f"torch_pjrt: deleted a corrupt AOTAutograd cache entry {path}; its graph is "
                    "traced again",
                    stacklevel=2,
                )


@contextlib.contextmanager
def scope(mode, options):
    """Around one AOTAutograd call of the backend: its cache looks in and writes to this
    configuration's folder, bundles the backend's graphs into its entries, and compiles the
    backward at once (so that the entry is written here, not at the first backward)."""
    directory = folder(mode, options)
    _verify(directory)
    saved_env = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    before = dict(dynamo_counters["aot_autograd"])
    # AOTAutogradCache stores under Inductor's cache directory, read from this variable on each
    # use; Dynamo compiles one frame at a time, so nothing else looks while it is redirected.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory
    try:
        with torch._functorch.config.patch(
            bundled_autograd_cache=True, force_non_lazy_backward_lowering=True
        ):
            yield
    finally:
        if saved_env is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved_env
        after = dynamo_counters["aot_autograd"]
        for ours, theirs in (
            ("aot_hits", "autograd_cache_hit"),
            ("aot_misses", "autograd_cache_miss"),
            ("aot_writes", "autograd_cache_saved"),
            ("aot_bypasses", "autograd_cache_bypass"),
        ):
            if after[theirs] != before.get(theirs, 0):
                stats.add(ours, after[theirs] - before.get(theirs, 0))


class TpuOutputCode(OutputCode):
    """The backend's compiled form of one ATen graph (forward, backward or inference), in the
    OutputCode form AOTAutogradCache bundles into its entries. It pickles as its FX graph (see
    CompiledGraph); a graph with collectives runs split (collectives.split) and is not cached."""

    def __init__(self, gm, kind):
        super().__init__()
        self._boxed_call = True
        if collectives.has_collectives(gm):
            self.graph = None
            self.split = collectives.split(gm, lambda piece: CompiledGraph(piece, kind))
        else:
            self.graph = CompiledGraph(gm, kind)
            self.split = None

    def __call__(self, args):  # aot_autograd's boxed calling convention: one list of inputs
        dynamo_cache.save_if_compiled()
        if self.graph is not None:
            return self.graph(args)
        return self.split(*args)

    def prepare_for_serialization(self):
        if self.graph is None:
            raise BypassAOTAutogradCache("torch_pjrt: graphs with collectives are not cached")

    def post_compile(self, example_inputs, constants, graph_kwargs):
        pass  # an unpickled CompiledGraph is ready to trace on its first call
