"""`torch.ops.tpu.ragged_all_to_all` on DTensors: the exchange of the local shards.

The op is itself a collective over the expert-parallel group, with per-rank sizes and offsets, so
no sharding rule of DTensor's (one global computation, redistributed) describes it. Called with
`input` and `output` DTensors sharded on dim 0 (`Shard(0)`) of a 1-D DeviceMesh whose group is the
op's, it exchanges their local shards as the plain-tensor call does and returns a DTensor with
`output`'s mesh, placements and global shape. The sizes and offsets are this rank's tensors, or
DTensors `Shard(0)` of the mesh (then the global one is the rank-by-rank table). Anything else
raises a ValueError saying what to do. The rule is registered with DTensor when
torch.distributed.tensor is first imported (it takes a second to import, so it is not imported for
processes that never use it).
"""

import importlib.abc
import importlib.util
import sys

import torch.distributed as dist

OP = "ragged_all_to_all"
_MODULE = "torch.distributed.tensor"


def _dtensor_class():
    return getattr(sys.modules.get(_MODULE), "DTensor", None)


def is_dtensor(t):
    cls = _dtensor_class()
    return cls is not None and isinstance(t, cls)


def local(t):
    """`t`'s local shard if it is a DTensor, else `t`."""
    return t.to_local() if is_dtensor(t) else t


def _check_sharded(what, t, mesh):
    from torch.distributed.tensor import Shard

    if t.device_mesh != mesh:
        raise ValueError(f"{OP}: {what} is on another DeviceMesh than input")
    if tuple(t.placements) != (Shard(0),):
        raise ValueError(
            f"{OP}: {what} is a DTensor placed {list(t.placements)}; the exchange takes rows "
            "(dim 0) sharded on a 1-D DeviceMesh, [Shard(0)] (or call it on .to_local() tensors)"
        )


def _rule(cls, func, types, args, kwargs):
    """DTensor's dispatch of the op: checks the placements and group, runs the op on the local
    shards, wraps the result as `output` is."""
    input, output, *tables, group_name = args
    for what, t in (("input", input), ("output", output)):
        if not is_dtensor(t):
            raise ValueError(
                f"{OP}: input and output must both be DTensors or both not; {what} is not"
            )
    mesh = input.device_mesh
    if mesh.ndim != 1:
        raise ValueError(
            f"{OP}: the DTensors' DeviceMesh has {mesh.ndim} dimensions; pass the local shards "
            "(.to_local()) with the expert-parallel group's name"
        )
    for what, t in (("input", input), ("output", output)):
        _check_sharded(what, t, mesh)
    names = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")
    for what, t in zip(names, tables):
        if is_dtensor(t):
            _check_sharded(what, t, mesh)
    group = mesh.get_group()
    if group_name != group.group_name and not (group_name == "" and group == dist.group.WORLD):
        raise ValueError(
            f"{OP}: group {group_name!r} is not the DTensors' DeviceMesh group {group.group_name!r}"
        )
    result = func(input.to_local(), output.to_local(), *(local(t) for t in tables), group_name)
    return cls(result, output._spec, requires_grad=False)


def specs(input, output):
    """(input's, output's) DTensor specs when the op was called on DTensors, else None."""
    return (input._spec, output._spec) if is_dtensor(input) else None


def backward(grad, tables, saved_specs, reverse):
    """The backward on DTensors: `reverse(local grad, local tables)` (the plain-tensor backward)
    on the local shards, its two gradients wrapped as input and output are."""
    input_spec, output_spec = saved_specs
    if tuple(grad.placements) != tuple(output_spec.placements):
        grad = grad.redistribute(output_spec.mesh, output_spec.placements)
    grad_input, grad_output = reverse(grad.to_local(), [local(t) for t in tables])
    cls = type(grad)
    return (
        cls(grad_input, input_spec, requires_grad=False),
        cls(grad_output, output_spec, requires_grad=False),
    )


def _register():
    import torch
    from torch.distributed.tensor import DTensor

    torch.library.register_torch_dispatch("tpu::ragged_all_to_all", DTensor, _rule)


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Finds torch.distributed.tensor as the other finders do, and registers the rule once the
    module has run."""

    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None:
            return None
        run = spec.loader.exec_module

        def run_then_register(module):
            run(module)
            _register()

        spec.loader.exec_module = run_then_register
        return spec


def register():
    """Registers the rule now if torch.distributed.tensor is imported, else when it is."""
    if _MODULE in sys.modules:
        _register()
    else:
        sys.meta_path.insert(0, _RegisterOnImport())
