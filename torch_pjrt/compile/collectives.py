"""Graphs with functional collectives (`torch.distributed._functional_collectives`, what DTensor
and FSDP2 emit under torch.compile): the graph is split at its collectives; each piece between
them is compiled as one program, and the collectives (with their `wait_tensor`) run eagerly on the
process group between the pieces, over its transport.
"""

import torch
from torch.fx.passes.split_module import split_module

_NAMESPACES = ("_c10d_functional", "_c10d_functional_autograd", "c10d_functional")


def is_collective(node):
    target = node.target
    return (
        node.op == "call_function"
        and isinstance(target, torch._ops.OpOverload)
        and target.namespace in _NAMESPACES
    )


def has_collectives(gm):
    return any(is_collective(n) for n in gm.graph.nodes)


class _Piece(torch.nn.Module):
    """A collective-free piece, called by the split graph like a module: returns what the piece's
    graph returns, through its compiled program (which returns a flat tuple)."""

    def __init__(self, compiled, single):
        super().__init__()
        self.compiled = compiled
        self.single = single

    def forward(self, *args):
        out = self.compiled(list(args))
        return out[0] if self.single else tuple(out)


def _return_tuple(gm):
    """Makes `gm` return a tuple (what compiled graphs return); True when it returned one value."""
    out = next(n for n in reversed(gm.graph.nodes) if n.op == "output")
    value = out.args[0]
    if isinstance(value, (tuple, list)):
        return False
    out.args = ((value,),)
    gm.recompile()
    return True


def split(gm, compile_piece):
    """`gm` split into runs of collective and collective-free nodes; `compile_piece(submodule)`
    returns the boxed callable of a collective-free piece. Returns the top-level GraphModule."""
    part, previous, parts = 0, None, {}
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        collective = is_collective(node)
        if collective != previous:
            part, previous = part + 1, collective
        parts[node] = part
    top = split_module(gm, None, lambda n: parts[n], keep_original_order=True)
    for name, sub in list(top.named_children()):
        if has_collectives(sub):
            continue
        single = _return_tuple(sub)
        setattr(top, name, _Piece(compile_piece(sub), single))
    return top
