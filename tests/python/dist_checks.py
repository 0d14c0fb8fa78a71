"""Checks that every rank of a torchrun job runs (tests/python/test_distributed.py launches them).

Usage: torchrun --nproc-per-node N tests/python/dist_checks.py SUITE[,SUITE...]
       python tests/python/dist_checks.py spawn N SUITE[,SUITE...]   (torch.multiprocessing.spawn)

Every expected value is computed on the CPU from the inputs of all ranks (each rank can rebuild
them: they depend only on the rank), never by the backend under test. A failed check raises, so
the process (and torchrun) exits non-zero; each rank prints "rank R: ok N checks" at the end.
"""

import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(__file__))  # models.py

DTYPES = [
    torch.float32,
    torch.bfloat16,
    torch.float16,
    torch.float64,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
]
FLOATS = {torch.float32, torch.bfloat16, torch.float16, torch.float64}
checks = 0


def check(got, expected, what):
    global checks
    got = got.cpu() if isinstance(got, torch.Tensor) else got
    if isinstance(expected, torch.Tensor):
        assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
        assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
        assert torch.equal(got, expected), f"{what}:\n got {got}\n expected {expected}"
    else:
        assert got == expected, f"{what}: {got} != {expected}"
    checks += 1


def value(rank, shape, dtype, offset=0):
    """Rank `rank`'s input: small integers (exact in every dtype), distinct per rank."""
    n = 1
    for s in shape:
        n *= s
    base = (torch.arange(n) + offset) % 5 + 1 + rank  # 1..5 + rank
    if dtype == torch.bool:
        return ((torch.arange(n) + rank) % 3 == 0).reshape(shape)
    if dtype == torch.uint8 or dtype == torch.int8:
        base = base % 7
    return base.reshape(shape).to(dtype)


def tpu(t):
    return t.to("tpu")


def reduce_cpu(tensors, op):
    stacked = torch.stack(tensors)
    if stacked.dtype == torch.bool:
        if op in ("sum", "max", "bor"):
            return stacked.any(0)
        if op == "bxor":
            return (stacked.to(torch.int32).sum(0) % 2).bool()
        return stacked.all(0)
    if op == "sum":
        return stacked.sum(0, dtype=stacked.dtype)
    if op == "product":
        return stacked.prod(0, dtype=stacked.dtype)
    if op == "min":
        return stacked.min(0).values
    if op == "max":
        return stacked.max(0).values
    if op == "avg":
        s = stacked.sum(0, dtype=stacked.dtype)
        return (
            s / len(tensors)
            if s.is_floating_point()
            else torch.div(s, len(tensors), rounding_mode="trunc")
        )
    out = tensors[0].clone()
    for t in tensors[1:]:
        out = {"band": torch.bitwise_and, "bor": torch.bitwise_or, "bxor": torch.bitwise_xor}[op](
            out, t
        )
    return out


OPS = {
    "sum": dist.ReduceOp.SUM,
    "product": dist.ReduceOp.PRODUCT,
    "min": dist.ReduceOp.MIN,
    "max": dist.ReduceOp.MAX,
    "avg": dist.ReduceOp.AVG,
    "band": dist.ReduceOp.BAND,
    "bor": dist.ReduceOp.BOR,
    "bxor": dist.ReduceOp.BXOR,
}


def ops_for(dtype):
    if dtype == torch.bool:
        return ["sum", "product", "min", "max", "band", "bor", "bxor"]
    if dtype in FLOATS:
        return ["sum", "product", "min", "max", "avg"]
    return ["sum", "product", "min", "max", "avg", "band", "bor", "bxor"]


def collectives():
    rank, size = dist.get_rank(), dist.get_world_size()
    shape = (2, 3)
    for dtype in DTYPES:
        inputs = [value(r, shape, dtype) for r in range(size)]
        mine = inputs[rank]
        for op in ops_for(dtype):
            t = tpu(mine)
            dist.all_reduce(t, OPS[op])
            check(t, reduce_cpu(inputs, op), f"all_reduce {op} {dtype}")
        root = size - 1
        t = tpu(mine)
        dist.broadcast(t, src=root)
        check(t, inputs[root], f"broadcast {dtype}")
        t = tpu(mine)
        dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
        check(t, reduce_cpu(inputs, "max") if rank == 0 else mine, f"reduce {dtype}")
        outs = [tpu(torch.zeros(shape, dtype=dtype)) for _ in range(size)]
        dist.all_gather(outs, tpu(mine))
        for r in range(size):
            check(outs[r], inputs[r], f"all_gather {dtype}")
        out = tpu(torch.zeros((2 * size, 3), dtype=dtype))
        dist.all_gather_into_tensor(out, tpu(mine))
        check(out, torch.cat(inputs), f"all_gather_into_tensor {dtype}")
        # send/recv around a ring
        if size > 1:
            nxt, prv = (rank + 1) % size, (rank - 1) % size
            got = tpu(torch.zeros(shape, dtype=dtype))
            if rank % 2 == 0:
                dist.send(tpu(mine), nxt)
                dist.recv(got, prv)
            else:
                dist.recv(got, prv)
                dist.send(tpu(mine), nxt)
            check(got, inputs[prv], f"send/recv {dtype}")

    # Bit-exact data movement: -0.0, inf and a NaN payload survive broadcast and all_gather.
    special = torch.tensor([-0.0, float("inf"), float("nan"), 1.5]).view(torch.int32)
    special[2] = 0x7FC01234
    special = special.view(torch.float32)
    t = tpu(special if rank == 0 else torch.zeros(4))
    dist.broadcast(t, src=0)
    check(t.view(torch.int32), special.view(torch.int32), "broadcast is bit-exact")

    # Reductions that move in a chunked layout.
    for dtype in (torch.float32, torch.int64, torch.bfloat16):
        full = [value(r, (size * 3,), dtype) for r in range(size)]
        total = reduce_cpu(full, "sum")
        out = tpu(torch.zeros(3, dtype=dtype))
        dist.reduce_scatter_tensor(out, tpu(full[rank]))
        check(out, total[rank * 3 : rank * 3 + 3], f"reduce_scatter_tensor {dtype}")
        out = tpu(torch.zeros(3, dtype=dtype))
        dist.reduce_scatter(out, [tpu(c) for c in full[rank].chunk(size)], op=dist.ReduceOp.MAX)
        check(out, reduce_cpu(full, "max")[rank * 3 : rank * 3 + 3], f"reduce_scatter {dtype}")
        # all_to_all_single, even: chunk j of rank r goes to rank j
        out = tpu(torch.zeros(size * 3, dtype=dtype))
        dist.all_to_all_single(out, tpu(full[rank]))
        check(out, torch.cat([full[j][rank * 3 : rank * 3 + 3] for j in range(size)]),
              f"all_to_all_single {dtype}")  # fmt: skip

    # Uneven all_to_all_single: rank r sends (r + j + 1) rows of 2 to rank j.
    def sends(r):
        splits = [r + j + 1 for j in range(size)]
        return value(r, (sum(splits), 2), torch.float32), splits

    x, in_splits = sends(rank)
    out_splits = [j + rank + 1 for j in range(size)]
    out = tpu(torch.zeros(sum(out_splits), 2))
    dist.all_to_all_single(out, tpu(x), out_splits, in_splits)
    expected = []
    for j in range(size):
        xj, sj = sends(j)
        expected.append(xj[sum(sj[:rank]) : sum(sj[: rank + 1])])
    check(out, torch.cat(expected), "all_to_all_single uneven")
    # all_to_all with lists of different sizes
    ins = [tpu(value(rank, (j + 1,), torch.int32, offset=j)) for j in range(size)]
    outs = [tpu(torch.zeros(rank + 1, dtype=torch.int32)) for _ in range(size)]
    dist.all_to_all(outs, ins)
    for j in range(size):
        check(outs[j], value(j, (rank + 1,), torch.int32, offset=rank), "all_to_all lists")

    # gather / scatter to and from the last rank
    root = size - 1
    gathered = [tpu(torch.zeros(4)) for _ in range(size)] if rank == root else None
    dist.gather(tpu(value(rank, (4,), torch.float32)), gathered, dst=root)
    if rank == root:
        for r in range(size):
            check(gathered[r], value(r, (4,), torch.float32), "gather")
    out = tpu(torch.zeros(4, dtype=torch.int64))
    chunks = [tpu(value(100 + j, (4,), torch.int64)) for j in range(size)] if rank == root else None
    dist.scatter(out, chunks, src=root)
    check(out, value(100 + rank, (4,), torch.int64), "scatter")

    # PREMUL_SUM: each rank's value times the factor, summed.
    t = tpu(value(rank, (3,), torch.float32))
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    check(t, sum(value(r, (3,), torch.float32) for r in range(size)) * 0.5, "premul_sum")

    # Coalesced forms
    a, b = tpu(value(rank, (3,), torch.float32)), tpu(value(rank, (2, 2), torch.float32, 1))
    dist.all_reduce_coalesced([a, b])
    check(a, reduce_cpu([value(r, (3,), torch.float32) for r in range(size)], "sum"), "coalesced a")
    check(b, reduce_cpu([value(r, (2, 2), torch.float32, 1) for r in range(size)], "sum"),
          "coalesced b")  # fmt: skip
    outs = [tpu(torch.zeros(2 * size)), tpu(torch.zeros(3 * size))]
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.all_gather_into_tensor(outs[0], tpu(value(rank, (2,), torch.float32)))
        dist.all_gather_into_tensor(outs[1], tpu(value(rank, (3,), torch.float32, 7)))
    cm.wait()
    check(
        outs[0], torch.cat([value(r, (2,), torch.float32) for r in range(size)]), "coalesced ag 0"
    )
    check(outs[1], torch.cat([value(r, (3,), torch.float32, 7) for r in range(size)]),
          "coalesced ag 1")  # fmt: skip

    # Async work: wait, is_completed, get_future
    t = tpu(value(rank, (5,), torch.float32))
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    work.wait()
    check(work.is_completed(), True, "is_completed after wait")
    check(fut.wait()[0], reduce_cpu([value(r, (5,), torch.float32) for r in range(size)], "sum"),
          "future value")  # fmt: skip
    if size > 1:
        # batch_isend_irecv ring exchange (every rank sends first)
        nxt, prv = (rank + 1) % size, (rank - 1) % size
        got = tpu(torch.zeros(3))
        reqs = dist.batch_isend_irecv(
            [dist.P2POp(dist.isend, tpu(value(rank, (3,), torch.float32)), nxt),
             dist.P2POp(dist.irecv, got, prv)]
        )  # fmt: skip
        for req in reqs:
            req.wait()
        check(got, value(prv, (3,), torch.float32), "batch_isend_irecv")
        req = (
            dist.irecv(got, prv)
            if rank % 2
            else dist.isend(tpu(value(rank, (3,), torch.float32)), nxt)
        )
        if rank % 2 == 0:
            later = dist.irecv(got, prv)
            req.wait()
            later.wait()
        else:
            dist.send(tpu(value(rank, (3,), torch.float32)), nxt)
            req.wait()
        check(got, value(prv, (3,), torch.float32), "isend/irecv")

    # all_reduce and broadcast results sit on host pieces the transport reuses (the CPU plugins
    # alias them): results kept alive keep their values while later collectives run, in-place
    # updates of one stay in it, and a freed result's piece serves the next call.
    def summed(i):
        return reduce_cpu([value(r, (1024,), torch.float32, i) for r in range(size)], "sum")

    kept = []
    for i in range(4):
        t = tpu(value(rank, (1024,), torch.float32, i))
        dist.all_reduce(t)
        kept.append(t)
    kept[0].add_(1)
    kept[1][10:20].mul_(2)
    del kept[2]
    for i in (4, 5):
        t = tpu(value(rank, (1024,), torch.float32, i))
        dist.all_reduce(t)
        kept.append(t)
    expected = [summed(0) + 1, summed(1), summed(3), summed(4), summed(5)]
    expected[1][10:20] *= 2
    for t, e in zip(kept, expected):
        check(t, e, "all_reduce results on reused pieces")
    b = tpu(value(rank, (1024,), torch.float32, 9))
    dist.broadcast(b, src=0)
    check(b * 2, value(0, (1024,), torch.float32, 9) * 2, "broadcast result on a piece, used")

    # Object collectives (what torch.distributed.checkpoint uses) go through tpu tensors.
    objs = [None] * size
    dist.all_gather_object(objs, {"rank": rank, "name": f"r{rank}"})
    check(objs, [{"rank": r, "name": f"r{r}"} for r in range(size)], "all_gather_object")
    dist.barrier()
    mismatches()


def mismatches():
    """What one process can see is wrong raises at once, naming the collective."""
    size = dist.get_world_size()

    def raises(kind, fragment, fn):
        global checks
        try:
            fn()
        except kind as e:
            assert fragment in str(e), f"{fragment!r} not in {e}"
            checks += 1
            return
        raise AssertionError(f"no {kind.__name__} for {fragment}")

    raises(TypeError, "all_gather_into_tensor", lambda: dist.all_gather_into_tensor(
        tpu(torch.zeros(2 * size, dtype=torch.int64)), tpu(torch.zeros(2))))  # fmt: skip
    raises(ValueError, "all_gather_into_tensor", lambda: dist.all_gather_into_tensor(
        tpu(torch.zeros(2 * size + 1)), tpu(torch.zeros(2))))  # fmt: skip
    raises(ValueError, "all_reduce: ReduceOp.BAND is not defined for f32",
           lambda: dist.all_reduce(tpu(torch.zeros(2)), dist.ReduceOp.BAND))  # fmt: skip
    raises(ValueError, "reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(
        tpu(torch.zeros(2)), tpu(torch.zeros(2 * size + 2))))  # fmt: skip
    raises(ValueError, "all_to_all_single", lambda: dist.all_to_all_single(
        tpu(torch.zeros(size)), tpu(torch.zeros(size)), [size + 1] + [0] * (size - 1), None))  # fmt: skip


def subgroups():
    """new_group and a 2-D DeviceMesh (4 ranks)."""
    from torch.distributed.device_mesh import init_device_mesh

    rank, size = dist.get_rank(), dist.get_world_size()
    evens = dist.new_group([r for r in range(size) if r % 2 == 0])
    if rank % 2 == 0:
        t = tpu(value(rank, (4,), torch.float32))
        dist.all_reduce(t, group=evens)
        check(t, sum(value(r, (4,), torch.float32) for r in range(0, size, 2)), "new_group")
        out = tpu(torch.zeros(4 * len(range(0, size, 2))))
        dist.all_gather_into_tensor(out, tpu(value(rank, (4,), torch.float32)), group=evens)
        check(out, torch.cat([value(r, (4,), torch.float32) for r in range(0, size, 2)]),
              "new_group all_gather")  # fmt: skip
    mesh = init_device_mesh("tpu", (2, size // 2), mesh_dim_names=("dp", "tp"))
    for dim in ("dp", "tp"):
        group = mesh.get_group(dim)
        members = dist.get_process_group_ranks(group)
        t = tpu(value(rank, (3,), torch.int64))
        dist.all_reduce(t, group=group)
        check(t, sum(value(r, (3,), torch.int64) for r in members), f"mesh {dim}")
    dist.barrier()


# ---- training: DDP, FSDP2 and tensor parallel against one process on the global batch ---------

STEPS, GLOBAL_BATCH = 10, 8


def gpt_batch(step):
    g = torch.Generator().manual_seed(1000 + step)
    idx = torch.randint(0, 64, (GLOBAL_BATCH, 17), generator=g)
    return idx[:, :16], idx[:, 1:]


def new_gpt():
    from models import GPT

    torch.manual_seed(0)
    return GPT().to("tpu")


def loss_of(model, x, y):
    logits = model(tpu(x))
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), tpu(y).reshape(-1)
    )


def reference_losses():
    model = new_gpt()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for step in range(STEPS):
        x, y = gpt_batch(step)
        loss = loss_of(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def train(model, params, local, average, foreach=None):
    """10 steps; `local(x)` picks this rank's part of the global batch; `average` says whether
    the rank losses are averaged to give the global loss."""
    opt = torch.optim.AdamW(params, lr=1e-2, foreach=foreach)
    losses = []
    for step in range(STEPS):
        x, y = gpt_batch(step)
        loss = loss_of(model, local(x), local(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        value = loss.detach().clone()
        if average:
            dist.all_reduce(value, dist.ReduceOp.AVG)
        losses.append(value.item())
    return losses


def same_losses(got, expected, what):
    global checks
    for step, (g, e) in enumerate(zip(got, expected)):
        assert abs(g - e) <= 1e-5 * abs(e), f"{what} step {step}: loss {g} != {e}"
    checks += 1


def training():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, size = dist.get_rank(), dist.get_world_size()
    per_rank = GLOBAL_BATCH // size

    def local(t):
        return t[rank * per_rank : (rank + 1) * per_rank]

    expected = reference_losses()

    ddp = DDP(new_gpt(), bucket_cap_mb=0.01)  # several buckets
    same_losses(train(ddp, ddp.parameters(), local, True), expected, "DDP")
    # no_sync: gradients stay local, the next synchronized backward averages the sum.
    x, y = gpt_batch(0)
    ddp.zero_grad()
    with ddp.no_sync():
        loss_of(ddp, local(x), local(y)).backward()
    grad = ddp.module.head.weight.grad.detach().clone()
    grads = [torch.zeros_like(grad) for _ in range(size)]
    dist.all_gather(grads, grad)
    check(
        any(not torch.equal(grads[0].cpu(), g.cpu()) for g in grads[1:]),
        True,
        "no_sync stays local",
    )
    loss_of(ddp, local(x), local(y)).backward()
    dist.all_gather(grads, ddp.module.head.weight.grad.detach().clone())
    check(all(torch.equal(grads[0].cpu(), g.cpu()) for g in grads[1:]), True, "sync after no_sync")

    mesh = init_device_mesh("tpu", (size,))
    model = new_gpt()
    for block in model.blocks:
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    same_losses(train(model, model.parameters(), local, True), expected, "FSDP2")

    model = new_gpt()
    for block in model.blocks:
        parallelize_module(block.mlp, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    # Only the MLPs are DTensors: the foreach optimizer cannot mix them with plain tensors.
    losses = train(model, model.parameters(), lambda t: t, False, foreach=False)
    same_losses(losses, expected, "tensor parallel")
    dist.barrier()


def dtensors():
    """DTensor placement changes, and a sharded checkpoint saved and loaded."""

    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    rank, size = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("tpu", (size,))
    full = torch.arange(4 * size * 6, dtype=torch.float32).reshape(4 * size, 6)
    d = distribute_tensor(tpu(full), mesh, [Shard(0)])
    check(d.to_local(), full[rank * 4 : (rank + 1) * 4], "Shard(0) local")
    check(d.redistribute(mesh, [Replicate()]).to_local(), full, "Shard(0) -> Replicate")
    check(d.redistribute(mesh, [Shard(1)]).full_tensor(), full, "Shard(0) -> Shard(1)")
    # Partial: each rank holds (rank + 1) * full; the sum is full times 1 + 2 + ... + size.
    partial = DTensor.from_local(tpu(full * (rank + 1)), mesh, [Partial()])
    total = full * (size * (size + 1) // 2)
    check(partial.redistribute(mesh, [Replicate()]).to_local(), total, "Partial -> Replicate")
    check(partial.redistribute(mesh, [Shard(0)]).to_local(), total[rank * 4 : (rank + 1) * 4],
          "Partial -> Shard(0)")  # fmt: skip
    check((d * 2).sum().full_tensor(), full.sum() * 2, "sharded sum")

    # Sharded checkpoint: save an FSDP2 model, load into a fresh one, compare.
    path = os.environ["DIST_CHECKS_TMP"]
    model = new_gpt()
    fully_shard(model, mesh=mesh)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.25)
    dcp.save({"model": model.state_dict()}, checkpoint_id=path)
    fresh = new_gpt()
    fully_shard(fresh, mesh=mesh)
    state = {"model": fresh.state_dict()}
    dcp.load(state, checkpoint_id=path)
    fresh.load_state_dict(state["model"])
    for (name, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items()):
        check(b.full_tensor(), a.full_tensor().cpu(), f"checkpoint {name}")
    dist.barrier()


def _ragged_layout(size):
    """Rank i sends (i + 2j + 1) % 3 rows to rank j (some none). Rank i's rows for j start at
    1 + the rows for lower ranks (row 0 and the last row are sent nowhere); rank j stores the rows
    from the senders in descending rank order after two untouched rows (the last row too)."""
    sends = [[(i + 2 * j + 1) % 3 for j in range(size)] for i in range(size)]
    in_rows = [2 + sum(sends[i]) for i in range(size)]
    in_off = [[1 + sum(sends[i][:j]) for j in range(size)] for i in range(size)]
    out_rows = [3 + sum(sends[i][j] for i in range(size)) for j in range(size)]
    out_off = [[2 + sum(sends[k][j] for k in range(i + 1, size)) for j in range(size)]
               for i in range(size)]  # fmt: skip
    return sends, in_rows, in_off, out_rows, out_off


def _ragged_cpu(inputs, outputs, in_off, sends, out_off):
    """The exchange on the CPU, for every rank at once (differentiable)."""
    size = len(inputs)
    results = [o.clone() for o in outputs]
    for i in range(size):
        for j in range(size):
            n, a, b = sends[i][j], in_off[i][j], out_off[i][j]
            results[j][b : b + n] = inputs[i][a : a + n]
    return results


def _expert_parallel_cpu(size):
    """Rank j is expert j: tokens go to their experts, each expert multiplies by its weight, the
    results come back by the reverse exchange; one loss over all ranks, backpropagated. Every
    rank's tokens (with gradients), weights (with gradients), loss scale, dispatch buffer and
    combined result, and the reverse exchange's output offsets and input offsets."""
    sends, in_rows, in_off, out_rows, out_off = _ragged_layout(size)
    recvs = [[sends[i][j] for i in range(size)] for j in range(size)]
    back_off = [[out_off[i][j] for i in range(size)] for j in range(size)]  # rank j sends to i
    back_to = [[in_off[i][j] for i in range(size)] for j in range(size)]
    tokens = [value(r, (in_rows[r], 3), torch.float32).requires_grad_() for r in range(size)]
    weights = [(torch.eye(3) * (r + 1) + 0.5).requires_grad_() for r in range(size)]
    scale = [value(r, (in_rows[r], 3), torch.float32, offset=2) for r in range(size)]
    bufs = [torch.zeros(out_rows[r], 3) for r in range(size)]
    dispatched = _ragged_cpu(tokens, bufs, in_off, sends, out_off)
    hidden = [d @ w for d, w in zip(dispatched, weights)]
    combined = _ragged_cpu(hidden, [torch.zeros(in_rows[r], 3) for r in range(size)], back_off,
                           recvs, back_to)  # fmt: skip
    sum((c * s).sum() for c, s in zip(combined, scale)).backward()
    return tokens, weights, scale, bufs, combined, back_off, back_to


def ragged():
    """ragged_all_to_all: uneven exchanges against the CPU, its backward, an expert-parallel layer
    (dispatch, expert, combine) trained one step, and mismatched sizes raising on every rank."""
    from torch_pjrt.distributed import ragged_all_to_all

    rank, size = dist.get_rank(), dist.get_world_size()
    sends, in_rows, in_off, out_rows, out_off = _ragged_layout(size)
    recvs = [[sends[i][j] for i in range(size)] for j in range(size)]
    ints = lambda xs: tpu(torch.tensor(xs))  # noqa: E731

    def args(r):
        return ints(in_off[r]), ints(sends[r]), ints(out_off[r]), ints(recvs[r])

    for dtype, row in ((torch.float32, (3,)), (torch.bfloat16, ()), (torch.int32, (2, 2))):
        inputs = [value(r, (in_rows[r], *row), dtype) for r in range(size)]
        outputs = [torch.full((out_rows[r], *row), -1).to(dtype) for r in range(size)]
        expected = _ragged_cpu(inputs, outputs, in_off, sends, out_off)[rank]
        got = ragged_all_to_all(tpu(inputs[rank]), tpu(outputs[rank]), *args(rank))
        check(got, expected, f"ragged_all_to_all {dtype}")
    # The op under its TorchTPU name, with the group's name and int32 offsets.
    x = value(rank, (in_rows[rank], 3), torch.float32)
    got = torch.ops.tpu.ragged_all_to_all(tpu(x), tpu(torch.zeros(out_rows[rank], 3)),
                                          *(a.int() for a in args(rank)),
                                          dist.group.WORLD.group_name)  # fmt: skip
    inputs = [value(r, (in_rows[r], 3), torch.float32) for r in range(size)]
    zeros = [torch.zeros(out_rows[r], 3) for r in range(size)]
    check(got, _ragged_cpu(inputs, zeros, in_off, sends, out_off)[rank], "torch.ops.tpu name")

    # Expert parallelism: rank j is expert j; tokens go to their experts, each expert multiplies
    # by its weight, the results come back by the reverse exchange; one loss over all ranks.
    tokens, weights, scale, bufs, combined, back_off, back_to = _expert_parallel_cpu(size)
    t = tpu(tokens[rank].detach()).requires_grad_()
    w = tpu(weights[rank].detach()).requires_grad_()
    d = ragged_all_to_all(t, tpu(bufs[rank]), *args(rank))
    h = d @ w
    c = ragged_all_to_all(h, tpu(torch.zeros(in_rows[rank], 3)), ints(back_off[rank]),
                          ints(recvs[rank]), ints(back_to[rank]), ints(sends[rank]))  # fmt: skip
    check(c, combined[rank].detach(), "expert-parallel forward")
    (c * tpu(scale[rank])).sum().backward()
    check(t.grad, tokens[rank].grad, "expert-parallel token gradient")
    check(w.grad, weights[rank].grad, "expert-parallel expert gradient")

    # The gradient of `output`: zero on the rows received, passed through elsewhere.
    o = tpu(torch.zeros(out_rows[rank], 3)).requires_grad_()
    ragged_all_to_all(tpu(x), o, *args(rank)).sum().backward()
    keep = torch.ones(out_rows[rank], 3)
    for i in range(size):
        keep[out_off[i][rank] : out_off[i][rank] + sends[i][rank]] = 0
    check(o.grad, keep, "gradient of output")

    # Rank 0 expects a row too many from the last rank: every rank raises the same error.
    wrong = list(recvs[rank])
    if rank == 0:
        wrong[-1] += 1
    try:
        ragged_all_to_all(tpu(x), tpu(torch.zeros(out_rows[rank] + 1, 3)), ints(in_off[rank]),
                          ints(sends[rank]), ints(out_off[rank]), ints(wrong))  # fmt: skip
    except ValueError as e:
        check(f"rank {size - 1} sends" in str(e) and "expects" in str(e), True, str(e))
    else:
        raise AssertionError("mismatched ragged_all_to_all sizes did not raise")


def ragged_dtensor():
    """ragged_all_to_all on DTensors sharded Shard(0) on a 1-D mesh (uneven local shards): the
    expert-parallel layer's forward and gradients equal the CPU's, with the results placed as
    `output`; another placement raises. Then the op inside torch.compile(backend="tpu")."""
    import torch._dynamo
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Replicate, Shard

    import torch_pjrt.compile  # noqa: F401  (backend "tpu")
    from torch_pjrt import metrics
    from torch_pjrt.distributed import ragged_all_to_all

    rank, size = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("tpu", (size,))
    sends, in_rows, in_off, out_rows, out_off = _ragged_layout(size)
    recvs = [[sends[i][j] for i in range(size)] for j in range(size)]
    tokens, weights, scale, bufs, combined, back_off, back_to = _expert_parallel_cpu(size)

    def sharded(parts):  # this rank's part (one per rank) of their concatenation, Shard(0)
        whole = torch.cat(parts)
        return DTensor.from_local(tpu(parts[rank]), mesh, [Shard(0)], run_check=False,
                                  shape=whole.shape, stride=whole.stride())  # fmt: skip

    def table(rows):  # the rank-by-rank table, each rank's row its shard
        return sharded([torch.tensor(r) for r in rows])

    plain = [tpu(torch.tensor(t[rank])) for t in (in_off, sends, out_off, recvs)]
    t = sharded([x.detach() for x in tokens]).requires_grad_()
    d = ragged_all_to_all(t, sharded(bufs), *plain)  # the mesh's group
    check((type(d), d.placements, d.shape), (DTensor, (Shard(0),), (sum(out_rows), 3)), "DTensor")
    w = tpu(weights[rank].detach()).requires_grad_()
    h = DTensor.from_local(d.to_local() @ w, mesh, [Shard(0)], run_check=False, shape=d.shape,
                           stride=d.stride())  # fmt: skip
    c = torch.ops.tpu.ragged_all_to_all(
        h, sharded([torch.zeros(r, 3) for r in in_rows]), table(back_off), table(recvs),
        table(back_to), table(sends), mesh.get_group().group_name,
    )  # fmt: skip
    check(c.to_local(), combined[rank].detach(), "DTensor expert-parallel forward")
    (c.to_local() * tpu(scale[rank])).sum().backward()
    check(t.grad.placements, (Shard(0),), "DTensor token gradient placement")
    check(t.grad.to_local(), tokens[rank].grad, "DTensor expert-parallel token gradient")
    check(w.grad, weights[rank].grad, "DTensor expert-parallel expert gradient")
    replicated = DTensor.from_local(tpu(bufs[rank]), mesh, [Replicate()], run_check=False)
    try:
        ragged_all_to_all(t.detach(), replicated, *plain)
    except ValueError as e:
        check("output is a DTensor placed [Replicate()]" in str(e), True, str(e))
    else:
        raise AssertionError("a replicated DTensor output was accepted")

    def layer(x, out, *tables):
        return ragged_all_to_all(x * 2, out, *tables) + 1

    # The op reads its sizes on the host, so the graph runs eagerly (counted), with the same values.
    fn = torch.compile(layer, backend="tpu", fullgraph=True)
    inputs = [value(r, (in_rows[r], 3), torch.float32) for r in range(size)]
    expected = _ragged_cpu([x * 2 for x in inputs], bufs, in_off, sends, out_off)[rank] + 1
    eager = metrics.counters()["compile"]["eager_graphs"]
    for _ in range(2):  # traced, then called again
        check(
            fn(tpu(inputs[rank]), tpu(bufs[rank]), *plain), expected, "compiled ragged_all_to_all"
        )
    check(metrics.counters()["compile"]["eager_graphs"], eager + 1, "the graph runs eagerly")
    torch._dynamo.reset()


def rank_devices():
    """CUDA-style device addressing: this process's one device is "tpu:<LOCAL_RANK>" of
    LOCAL_WORLD_SIZE (WORLD_SIZE under mp.spawn, which sets no LOCAL_WORLD_SIZE)."""
    local_rank = int(os.environ["LOCAL_RANK"])
    count = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ["WORLD_SIZE"]))
    here = torch.device("tpu", local_rank)
    check(torch.tpu.device_count(), count, "device_count")
    check(torch.accelerator.device_count(), count, "torch.accelerator.device_count")
    check(torch.tpu.current_device(), local_rank, "current_device")
    check(torch.ones(2, device="tpu").device, here, '"tpu" is tpu:<LOCAL_RANK>')
    x = torch.arange(6.0).reshape(2, 3)
    check(x.to(here).device, here, "to(torch.device('tpu', local_rank))")
    check(x.to(f"tpu:{local_rank}").device, here, 'to("tpu:<local_rank>")')
    model = torch.nn.Linear(3, 2).to(f"tpu:{local_rank}")
    check(model.weight.device, here, "Module.to")
    with torch.no_grad():
        model.weight.copy_(torch.arange(6.0).reshape(2, 3))  # small integers: exact
        model.bias.fill_(1.0)
        check(model(x.to(here)), x @ torch.arange(6.0).reshape(2, 3).T + 1, "a module on tpu:<r>")
    torch.tpu.set_device(local_rank)
    check(torch.tpu.current_device(), local_rank, "set_device(local_rank)")
    with torch.tpu.device(local_rank):
        check(torch.zeros(1, device="tpu").device, here, "torch.tpu.device(local_rank)")
    other = (local_rank + 1) % count
    for attempt in (
        lambda: torch.ones(1, device=f"tpu:{other}"),
        lambda: torch.tpu.set_device(other),
    ):
        try:
            attempt()
        except IndexError as e:
            assert "belongs to another process" in str(e), str(e)
        else:
            raise AssertionError(f"tpu:{other} was accepted on local rank {local_rank}")
    t = tpu(torch.full((3,), float(dist.get_rank() + 1)))
    dist.all_reduce(t)
    size = dist.get_world_size()
    check(t, torch.full((3,), float(size * (size + 1) // 2)), "all_reduce on tpu:<local_rank>")
    check(t.device, here, "all_reduce result device")


def compiled():
    """Functional collectives inside torch.compile(backend="tpu")."""
    import torch._dynamo
    import torch.distributed._functional_collectives as funcol

    import torch_pjrt.compile  # noqa: F401  (backend "tpu")

    rank, size = dist.get_rank(), dist.get_world_size()
    group = dist.group.WORLD

    def step(x):
        y = funcol.all_reduce(x * 2, "sum", group)
        z = funcol.all_gather_tensor(y + 1, 0, group)
        return funcol.reduce_scatter_tensor(z * 3, "sum", 0, group) - 1

    fn = torch.compile(step, backend="tpu", fullgraph=True)
    xs = [value(r, (4,), torch.float32) for r in range(size)]
    y = sum(x * 2 for x in xs)
    expected = (y + 1) * 3 * size - 1
    for _ in range(2):  # compiled, then replayed
        check(fn(tpu(xs[rank])), expected, "compiled functional collectives")
    torch._dynamo.reset()
    dist.barrier()


def failure():
    """Rank 1 exits (DIST_CHECKS_FAILURE=exit) or stops issuing collectives (stall) after a first
    collective; the next collective of the others raises (a DistBackendError naming it) within
    the group's timeout instead of hanging."""
    rank = dist.get_rank()
    t = tpu(torch.ones(4))
    dist.all_reduce(t)
    if rank == 1:
        if os.environ["DIST_CHECKS_FAILURE"] == "stall":
            time.sleep(float(os.environ["DIST_CHECKS_TIMEOUT_S"]) + 5)
        os._exit(0)
    time.sleep(0.5)
    began = time.perf_counter()
    try:
        dist.all_reduce(t)
    except dist.DistBackendError as e:
        print(f"rank {rank}: raised in {time.perf_counter() - began:.1f} s: {e}", flush=True)
        os._exit(0)  # the group cannot be torn down cleanly without its peer
    raise AssertionError("all_reduce with a rank gone did not raise")


def killed_mid_ddp_step():
    """Rank 1 is killed (SIGKILL) in the middle of a DDP backward, after its first gradient
    buckets were reduced; rank 0's backward raises a DistBackendError within the group's timeout,
    the optimizer step never runs (its parameters keep their values), and the device keeps
    working. Run without torchrun (its agent would stop rank 0 when rank 1 dies)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank = dist.get_rank()
    ddp = DDP(new_gpt(), bucket_cap_mb=0.01)  # several buckets, reduced as backward goes
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-2)
    x, y = gpt_batch(0)
    for _ in range(2):  # whole steps first: the failure is not in the first one
        opt.zero_grad()
        loss_of(ddp, x[rank::2], y[rank::2]).backward()
        opt.step()
    before = {k: v.cpu() for k, v in ddp.module.state_dict().items()}
    if rank == 1:
        # The embedding's gradient comes last in the backward, after the other buckets' reductions.
        ddp.module.tok.weight.register_hook(lambda g: os.kill(os.getpid(), signal.SIGKILL))
    began = time.perf_counter()
    try:
        opt.zero_grad()
        loss_of(ddp, x[rank::2], y[rank::2]).backward()
        opt.step()
    except dist.DistBackendError as e:
        print(f"rank {rank}: raised in {time.perf_counter() - began:.1f} s: {e}", flush=True)
        after = ddp.module.state_dict()
        for k, v in before.items():
            check(torch.equal(after[k].cpu(), v), True, f"{k} kept its value")
        check((tpu(torch.arange(4.0)) * 2).sum().item(), 12.0, "the device still computes")
        print(f"rank {rank}: ok {checks} checks", flush=True)
        os._exit(0)  # the group cannot be torn down cleanly without its peer
    raise AssertionError("a DDP backward with its peer killed did not raise")


def mismatch():
    """Ranks that issue all_reduces of different sizes: under TORCH_DISTRIBUTED_DEBUG=DETAIL
    (PyTorch's wrapper compares each collective's shapes across ranks first) every rank raises,
    naming the collective and the shapes."""
    rank = dist.get_rank()
    try:
        dist.all_reduce(tpu(torch.ones(4 + rank)))
    except RuntimeError as e:
        assert "mismatch" in str(e).lower() and "ALLREDUCE" in str(e), str(e)
        print(f"rank {rank}: ok mismatch raised", flush=True)
        os._exit(0)
    raise AssertionError("mismatched all_reduce did not raise")


SUITES = {
    "failure": failure,
    "killed_mid_ddp_step": killed_mid_ddp_step,
    "mismatch": mismatch,
    "collectives": collectives,
    "subgroups": subgroups,
    "training": training,
    "dtensors": dtensors,
    "compiled": compiled,
    "rank_devices": rank_devices,
    "ragged": ragged,
    "ragged_dtensor": ragged_dtensor,
}


def spawned(rank, size, suites):
    """A worker of torch.multiprocessing.spawn: the launch variables are set after torch_pjrt was
    imported, before the first device use, which is when the process model is settled."""
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(size))
    main(suites)


def main(suites):
    names = suites.split(",")
    backend = os.environ.get("DIST_CHECKS_BACKEND")  # None: the default for device "tpu"
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.tpu.set_device(local_rank)  # this process's device is tpu:<LOCAL_RANK>
    timeout = os.environ.get("DIST_CHECKS_TIMEOUT_S")
    # DIST_CHECKS_DEVICE_ID=1: init_process_group(device_id=tpu:<LOCAL_RANK>), which names the
    # backend.
    device_id = torch.device("tpu", local_rank) if os.environ.get("DIST_CHECKS_DEVICE_ID") else None
    dist.init_process_group(
        backend,
        timeout=timedelta(seconds=float(timeout)) if timeout else None,
        device_id=device_id,
    )
    # With no backend or device named, PyTorch reports "undefined" and picks the accelerator's
    # default backend.
    expected = backend or ("tpu_dist" if device_id else "undefined")
    assert dist.get_backend() == expected, dist.get_backend()
    assert dist.get_default_backend_for_device("tpu") == "tpu_dist"
    tpu_backend = dist.group.WORLD._get_backend(torch.device("tpu"))
    if os.environ.get("TORCH_DISTRIBUTED_DEBUG") == "DETAIL":
        tpu_backend = tpu_backend.wrapped_pg  # PyTorch's checking wrapper
    assert type(tpu_backend).__name__ == "ProcessGroupTpu", type(tpu_backend)
    start = time.perf_counter()
    for name in names:
        began = time.perf_counter()
        SUITES[name]()
        if dist.get_rank() == 0:
            print(f"suite {name}: {time.perf_counter() - began:.1f} s", flush=True)
    dist.destroy_process_group()
    print(f"rank {int(os.environ['RANK'])}: ok {checks} checks in {time.perf_counter() - start:.1f} s",
          flush=True)  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1] == "spawn":  # spawn N SUITES: N processes by torch.multiprocessing.spawn
        import torch.multiprocessing as mp

        mp.spawn(spawned, args=(int(sys.argv[2]), sys.argv[3]), nprocs=int(sys.argv[2]))
    else:
        main(sys.argv[1])
