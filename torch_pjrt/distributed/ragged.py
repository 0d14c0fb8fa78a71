"""`torch.ops.tpu.ragged_all_to_all`: the ragged token exchange of expert parallelism (XLA's and
TorchTPU's RaggedAllToAll), with autograd.

Each rank sends `send_sizes[j]` rows of `input`, starting at row `input_offsets[j]`, to rank j, which
writes them into its `output` at row `output_offsets[j]` (an offset in the receiver's output, as in
XLA); `recv_sizes[j]` is how many rows this rank receives from rank j. The result is `output` with
the received rows written in; rows nobody writes keep `output`'s values. Rows are along dim 0.

It runs on the group's tpu_dist transport (host or device) as an uneven `all_to_all_single`. The
sizes and offsets are read to the host first (the transports take host split sizes), and every
rank all-gathers every rank's table, so a bad argument raises the same ValueError on every rank
instead of leaving some ranks waiting. The backward is the reverse exchange: each rank sends back
the gradient of the rows it received and writes what comes back where its rows were sent from.
"""

import torch
import torch.distributed as dist

from . import ragged_dtensor

__all__ = ["ragged_all_to_all"]

OP = "ragged_all_to_all"


def _group(group_name):
    if not group_name:
        return dist.group.WORLD
    return dist.distributed_c10d._resolve_process_group(group_name)


def _check_args(input, output, tables, size):
    """Checks every argument that needs no exchange (the same on every rank of an SPMD program)."""
    for what, t in (("input", input), ("output", output)):
        if t.device.type != "tpu":
            raise ValueError(f"{OP}: {what} must be a tpu tensor, got one on {t.device}")
        if t.dim() < 1:
            raise ValueError(f"{OP}: {what} must have at least one dimension")
    if input.dtype != output.dtype:
        raise ValueError(f"{OP}: input is {input.dtype} but output is {output.dtype}")
    if input.shape[1:] != output.shape[1:]:
        raise ValueError(
            f"{OP}: input rows {list(input.shape[1:])} and output rows "
            f"{list(output.shape[1:])} differ"
        )
    for what, t in tables.items():
        if not isinstance(t, torch.Tensor) or t.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{OP}: {what} must be an int32 or int64 tensor")
        if t.shape != (size,):
            raise ValueError(
                f"{OP}: {what} must have one entry per rank of the group ({size}), "
                f"got shape {list(t.shape)}"
            )


def _exchange_tables(input, output, tables, group):
    """Every rank's [input_offsets, send_sizes, output_offsets, recv_sizes, input rows, output
    rows], as host lists, after checking that they agree: the same checks and message everywhere."""
    size = dist.get_world_size(group)
    mine = torch.cat([t.to(input.device, torch.int64) for t in tables.values()])
    mine = torch.cat([mine, torch.tensor([input.shape[0], output.shape[0]], device=mine.device)])
    everyone = torch.empty(size * mine.numel(), dtype=torch.int64, device=mine.device)
    dist.all_gather_single(everyone, mine, group=group)
    rows = everyone.cpu().reshape(size, -1).tolist()
    table = [
        {
            "input_offsets": r[0:size],
            "send_sizes": r[size : 2 * size],
            "output_offsets": r[2 * size : 3 * size],
            "recv_sizes": r[3 * size : 4 * size],
            "input_rows": r[4 * size],
            "output_rows": r[4 * size + 1],
        }
        for r in rows
    ]
    for i, t in enumerate(table):
        for j in range(size):
            start, n = t["input_offsets"][j], t["send_sizes"][j]
            if n < 0 or t["recv_sizes"][j] < 0:
                raise ValueError(f"{OP}: rank {i} has a negative size for rank {j}")
            if start < 0 or start + n > t["input_rows"]:
                raise ValueError(
                    f"{OP}: rank {i} sends rows [{start}, {start + n}) of an input of "
                    f"{t['input_rows']} rows to rank {j}"
                )
            if table[j]["recv_sizes"][i] != n:
                raise ValueError(
                    f"{OP}: rank {i} sends {n} rows to rank {j}, which expects "
                    f"{table[j]['recv_sizes'][i]} (its recv_sizes[{i}])"
                )
            at = t["output_offsets"][j]
            if at < 0 or at + n > table[j]["output_rows"]:
                raise ValueError(
                    f"{OP}: rank {i} writes rows [{at}, {at + n}) of rank {j}'s output of "
                    f"{table[j]['output_rows']} rows"
                )
    return table


def _ragged(input, output, input_offsets, send_sizes, output_offsets, recv_sizes, group_name):
    group = _group(group_name)
    size, me = dist.get_world_size(group), dist.get_rank(group)
    tables = {
        "input_offsets": input_offsets,
        "send_sizes": send_sizes,
        "output_offsets": output_offsets,
        "recv_sizes": recv_sizes,
    }
    _check_args(input, output, tables, size)
    table = _exchange_tables(input, output, tables, group)
    t = table[me]
    sends = [
        input[t["input_offsets"][j] : t["input_offsets"][j] + t["send_sizes"][j]]
        for j in range(size)
    ]
    received = input.new_empty((sum(t["recv_sizes"]), *input.shape[1:]))
    dist.all_to_all_single(
        received, torch.cat(sends), t["recv_sizes"], t["send_sizes"], group=group
    )
    result = output.clone()
    start = 0
    for j in range(size):
        n = t["recv_sizes"][j]
        if n:
            at = table[j]["output_offsets"][me]  # where rank j put its rows in this output
            result[at : at + n] = received[start : start + n]
        start += n
    return result


@torch.library.custom_op("tpu::ragged_all_to_all", mutates_args=())
def ragged_all_to_all_op(
    input: torch.Tensor,
    output: torch.Tensor,
    input_offsets: torch.Tensor,
    send_sizes: torch.Tensor,
    output_offsets: torch.Tensor,
    recv_sizes: torch.Tensor,
    group_name: str,
) -> torch.Tensor:
    return _ragged(input, output, input_offsets, send_sizes, output_offsets, recv_sizes, group_name)


@ragged_all_to_all_op.register_fake
def _(input, output, input_offsets, send_sizes, output_offsets, recv_sizes, group_name):
    return torch.empty_like(output)


def _setup_context(ctx, inputs, output):
    input, out, input_offsets, send_sizes, output_offsets, recv_sizes, group_name = inputs
    ctx.save_for_backward(input_offsets, send_sizes, output_offsets, recv_sizes)
    ctx.input_shape = ragged_dtensor.local(input).shape
    ctx.group_name = group_name
    ctx.dtensor_specs = ragged_dtensor.specs(input, out)


def _backward(ctx, grad):
    if ctx.dtensor_specs is None:
        grads = _reverse(ctx, grad, ctx.saved_tensors)
    else:
        grads = ragged_dtensor.backward(
            grad, ctx.saved_tensors, ctx.dtensor_specs, lambda g, tables: _reverse(ctx, g, tables)
        )
    return (*grads, None, None, None, None, None)


def _reverse(ctx, grad, tables):
    """The reverse exchange: the gradient of the rows this rank received goes back to their
    senders, landing where the rows were sent from; the received rows' gradient does not reach
    `output` (they overwrote it). The gradients of input and output."""
    input_offsets, send_sizes, output_offsets, recv_sizes = tables
    group = _group(ctx.group_name)
    size, me = dist.get_world_size(group), dist.get_rank(group)

    def column(offsets):  # every rank's offsets[me]
        everyone = torch.empty(size * size, dtype=torch.int64, device=grad.device)
        dist.all_gather_single(everyone, offsets.to(grad.device, torch.int64), group=group)
        return everyone.reshape(size, size)[:, me].contiguous()

    landed = column(output_offsets)  # where each peer's rows landed here
    came_from = column(input_offsets)  # where this rank's rows came from in each peer's input
    zeros = grad.new_zeros(ctx.input_shape)
    grad_input = torch.ops.tpu.ragged_all_to_all(
        grad, zeros, landed, recv_sizes, came_from, send_sizes, ctx.group_name
    )
    grad_output = grad.clone()
    for at, n in zip(landed.cpu().tolist(), recv_sizes.cpu().tolist()):
        if n:
            grad_output[at : at + n] = 0
    return grad_input, grad_output


ragged_all_to_all_op.register_autograd(_backward, setup_context=_setup_context)
ragged_dtensor.register()


def ragged_all_to_all(
    input, output, input_offsets, send_sizes, output_offsets, recv_sizes, group=None
):
    """`torch.ops.tpu.ragged_all_to_all` with `group` a ProcessGroup, its name, or None for the
    default group, or for DTensors their DeviceMesh's (TorchTPU passes the group's name)."""
    if group is None:
        is_dtensor = ragged_dtensor.is_dtensor(input)
        group = input.device_mesh.get_group() if is_dtensor else dist.group.WORLD
    name = group if isinstance(group, str) else group.group_name
    return torch.ops.tpu.ragged_all_to_all(
        input, output, input_offsets, send_sizes, output_offsets, recv_sizes, name
    )
