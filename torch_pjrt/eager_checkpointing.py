"""Activation checkpointing in Fused eager: the recomputation starts a new program.

In Fused mode a forward and its backward usually become one program. `torch.utils.checkpoint`
(reentrant or not, selective included) recomputes each region in the backward from the region's
inputs, but inside one program XLA sees the same operations on the same values as in the forward
and merges them (common subexpression elimination), or computes them early: the activations then
stay alive from the forward to the backward, and checkpointing saves nothing. (An optimization
barrier on the region's inputs, as compiled graphs get, stops the merge but not the early
schedule: measured, XLA:CPU assigned the same memory to such a program with and without
checkpointing.) So when a region is recomputed (in the backward, the autograd engine running),
the pending work is launched first, as `torch_pjrt.launch_pending()` does: the forward's program
outputs only what is still referenced (the checkpointed regions' inputs, not their activations),
and each recomputation runs in the program of its own part of the backward. Strict and Debug run
each op as its own program already, and torch.compile handles checkpoints itself (an optimization
barrier, compile/checkpointing.py), so neither is changed.
"""

import functools

import torch

from . import _C, _integrations, eager


def _recomputing():
    return torch._C._current_graph_task_id() != -1 and eager.get_eager_mode() == "fused"


def _cut_before_recompute(function):
    @functools.wraps(function)
    def run(*args, **kwargs):
        if _recomputing():
            _C._launch_pending()
        return function(*args, **kwargs)

    return run


def _patch(module):
    original = module.checkpoint
    if getattr(original, "_tpu_cut", False):
        return

    @functools.wraps(original)
    def checkpoint(function, *args, **kwargs):
        if not torch.compiler.is_compiling():
            function = _cut_before_recompute(function)
        return original(function, *args, **kwargs)

    checkpoint._tpu_cut = True
    module.checkpoint = checkpoint


def install():
    _integrations.patch_on_import("torch.utils.checkpoint", _patch)
