"""Activation checkpointing in compiled graphs: an optimization barrier in front of each recomputed
region of a backward graph.

`torch.utils.checkpoint` (reentrant or not, and selective checkpointing) reaches aot_autograd as
`tag_activation_checkpoint`; the partitioner then recomputes the region's forward ops in the
backward graph, which keep the tags (`recompute`, `ac_graph_id`). As JAX's `checkpoint` does
(prevent_cse), the region's inputs go through `stablehlo.optimization_barrier` first, so XLA
cannot merge the recomputation with the forward computation of the same values (common
subexpression elimination) or hoist it out of its place, which would keep the activations alive
and save no memory. `torch.ops.tpu.optimization_barrier` is TorchTPU's op of that name.
"""

import operator

import torch
from torch.utils.checkpoint import CheckpointPolicy

from ..stablehlo_ops import stablehlo_op

_MLIR_TYPES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.bool: "i1",
    torch.int8: "i8",
    torch.int16: "i16",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.uint8: "ui8",
}
_RECOMPUTED = (CheckpointPolicy.PREFER_RECOMPUTE, CheckpointPolicy.MUST_RECOMPUTE)


def _tensor_type(spec):
    if spec.dtype not in _MLIR_TYPES:
        raise TypeError(f"tpu::optimization_barrier: unsupported dtype {spec.dtype}")
    return "tensor<" + "".join(f"{d}x" for d in spec.shape) + _MLIR_TYPES[spec.dtype] + ">"


@stablehlo_op("tpu::optimization_barrier")
def optimization_barrier(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """The values of `tensors`, through one `stablehlo.optimization_barrier` (XLA neither moves
    computations across it nor merges values on either side of it)."""
    types = [_tensor_type(s) for s in tensors]
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    args = ", ".join(f"%a{i}" for i in range(len(types)))
    n = len(types)
    result = "%r" if n == 1 else f"%r:{n}"
    values = "%r" if n == 1 else ", ".join(f"%r#{i}" for i in range(n))
    return (
        f"func.func public @main({params}) -> ({', '.join(types)}) {{\n"
        f"  {result} = stablehlo.optimization_barrier {args} : {', '.join(types)}\n"
        f"  return {values} : {', '.join(types)}\n"
        "}\n"
    )


def _is_tensor(node):
    return isinstance(node.meta.get("val"), torch.Tensor)


def add_recompute_barriers(gm):
    """Puts the inputs of each recomputed region of backward graph `gm` through one
    optimization barrier; returns the number of barriers added."""
    regions = {}
    for node in gm.graph.nodes:
        if (
            node.op == "call_function"
            and node.meta.get("recompute") in _RECOMPUTED
            and "ac_graph_id" in node.meta
            and node.meta.get("partitioner_tag") != "is_backward"
        ):
            regions.setdefault(node.meta["ac_graph_id"], []).append(node)
    if not regions:
        return 0
    order = {node: i for i, node in enumerate(gm.graph.nodes)}
    added = 0
    for members in regions.values():
        inside = set(members)
        first = order[members[0]]
        inputs = []
        for node in members:
            for arg in node.all_input_nodes:
                # Only values defined before the region starts can go through one barrier there.
                new = arg not in inside and arg not in inputs and _is_tensor(arg)
                if new and order[arg] < first:
                    inputs.append(arg)
        if not inputs:
            continue
        graph = gm.graph
        with graph.inserting_before(members[0]):
            barrier = graph.call_function(
                torch.ops.tpu.optimization_barrier.default, (list(inputs),)
            )
            barrier.meta["val"] = [a.meta["val"] for a in inputs]
            outs = []
            for i, a in enumerate(inputs):
                out = graph.call_function(operator.getitem, (barrier, i))
                out.meta["val"] = a.meta["val"]
                outs.append(out)
        for node in members:
            for a, out in zip(inputs, outs):
                node.replace_input_with(a, out)
        added += 1
    gm.graph.lint()
    gm.recompile()
    return added
