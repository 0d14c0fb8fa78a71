"""Dynamo's own results across processes, through torch's precompile cache: with it on
(`TORCH_CACHING_PRECOMPILE=1`, i.e. torch._dynamo.config.caching_precompile), a new process finds
a compiled function's bytecode, guards and graphs on disk, this backend's graphs bundled with
them, and skips Dynamo's tracing as well as AOTAutograd's; the programs come from the program disk
cache. torch writes these entries only when asked: the backend asks at the first run of each newly
compiled graph, so a server killed later keeps them.

The entries live in `$TORCH_PJRT_CACHE_DIR/dynamo/<digest>/`, the digest covering the plugin, XLA,
torch, torch_pjrt's code and the compile options (cache_key.digest; not the torch.compile mode
and options: Dynamo looks before the backend sees them, and they compile the same way). Dynamo
checks the source of every function it traced, so a change of model code misses. While this
cache is on, every backend's precompile entries in the process go to that folder.

torch 2.13 packages inference functions (a model's forward, a serving step). It refuses graphs
that hold parameters by static address, which a compiled optimizer step's do, and then fails the
compile (AssertionError "check_fn.guards_state must not be None") instead of compiling without
the cache: leave it off for training steps.
"""

import os
import warnings

import torch
from torch._dynamo import package as dynamo_package
from torch._dynamo.precompile_context import PrecompileContext

from .. import _compile_stats as stats
from .. import cache as disk_cache
from .cache_key import digest

_unsaved = False  # a graph was compiled since the entries were last written


def enabled():
    return torch._dynamo.config.caching_precompile and disk_cache.cache_dir() is not None


def folder():
    root = disk_cache.cache_dir()
    if root is None:  # the cache turned off since: torch's own folder
        return os.path.join(dynamo_package.cache_dir(), "dynamo")
    return os.path.join(root, "dynamo", digest())


def install():
    """Points torch's Dynamo cache at this backend's folder (used only while the precompile cache
    is on, whenever that is switched on). torch's cache object takes its folder from a method
    called at each use; an instance attribute overrides it."""
    if disk_cache.cache_dir() is not None:
        dynamo_package.DynamoCache.path_prefix = folder


def compiled():
    """The backend compiled a graph: the entries are written at its first run."""
    global _unsaved
    _unsaved = enabled()


def save_if_compiled():
    """At a graph's run: writes the Dynamo entries recorded since the last compile (Dynamo records
    a frame's entry once the frame is compiled, before it runs)."""
    global _unsaved
    if _unsaved:
        _unsaved = False
        try:
            PrecompileContext.save_to_dynamo_cache()
        except Exception as e:  # noqa: BLE001 (a cache that cannot be written is a warning)
            warnings.warn(f"torch_pjrt: Dynamo's cache entries were not written: {e}", stacklevel=2)
            return
        stats.add("dynamo_saves")
