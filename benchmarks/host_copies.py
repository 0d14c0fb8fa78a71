"""Host copies on "tpu": a training loop whose input batches come from the host, fed by synchronous
copies from pageable memory, or from pinned memory with non_blocking copies issued one step ahead
so that the next batch moves while the current step runs. Beside it, how long a non_blocking copy
call takes to return against how long the copy takes to complete, in both directions.

Each loop is timed over --steps steps, synchronized at the end, as the median of --rounds rounds
after one warm-up round, the two loops alternating round by round. Prints a line per figure and JSON last: {"sync_loop_ms", "overlap_loop_ms",
"overlap_over_sync", "h2d_return_ms", "h2d_done_ms", "d2h_return_ms", "d2h_done_ms", ...}.

    python benchmarks/host_copies.py [--batch 512] [--features 4096] [--steps 8] [--rounds 5]
"""

import argparse
import functools
import json
import statistics
import time

import torch

import torch_pjrt  # noqa: F401  (registers "tpu")


def make_model(features, hidden):
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(features, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, 1),
    ).to("tpu")


def train_loop(model, opt, batches, non_blocking):
    """One pass over `batches`; with non_blocking, batch i+1's copy is issued before step i."""
    nxt = batches[0].to("tpu", non_blocking=non_blocking)
    for i in range(len(batches)):
        x = nxt
        if i + 1 < len(batches):
            nxt = batches[i + 1].to("tpu", non_blocking=non_blocking)
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()
    torch.tpu.synchronize()


def interleaved_medians(fns, rounds):
    """Median ms of each of `fns`, timed in alternation round by round (after one warm-up call
    each, which compiles), so that a change in the host's load hits all of them alike."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t0) * 1e3)
    return {name: statistics.median(t) for name, t in times.items()}


def copy_latency(nbytes, rounds):
    """Median ms for a non_blocking copy call to return and for the copy to complete."""
    n = nbytes // 4
    host = torch.randn(n).pin_memory()
    dev = host.to("tpu")
    out = torch.empty(n, pin_memory=True)
    torch.tpu.synchronize()
    figures = {}
    for name, start in (
        ("h2d", lambda: host.to("tpu", non_blocking=True)),
        ("d2h", lambda: out.copy_(dev, non_blocking=True)),
    ):
        returned, done = [], []
        for _ in range(rounds + 1):
            t0 = time.perf_counter()
            keep = start()
            t1 = time.perf_counter()
            torch.tpu.synchronize()
            t2 = time.perf_counter()
            returned.append((t1 - t0) * 1e3)
            done.append((t2 - t0) * 1e3)
            del keep
        figures[f"{name}_return_ms"] = statistics.median(returned[1:])
        figures[f"{name}_done_ms"] = statistics.median(done[1:])
    assert torch.equal(out, host)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--features", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--copy-mb", type=int, default=256)
    args = parser.parse_args()
    g = torch.Generator().manual_seed(0)
    pageable = [torch.randn(args.batch, args.features, generator=g) for _ in range(args.steps)]
    pinned = [b.pin_memory() for b in pageable]
    results = {"batch_mb": args.batch * args.features * 4 / 2**20, "steps": args.steps}
    loops = {}
    for name, batches, non_blocking in (("sync", pageable, False), ("overlap", pinned, True)):
        model = make_model(args.features, args.hidden)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        loops[name] = functools.partial(train_loop, model, opt, batches, non_blocking)
    for name, ms in interleaved_medians(loops, args.rounds).items():
        results[f"{name}_loop_ms"] = round(ms, 2)
        print(f"{name:8s} loop of {args.steps} steps: {ms:9.2f} ms", flush=True)
    results["overlap_over_sync"] = round(results["overlap_loop_ms"] / results["sync_loop_ms"], 3)
    print(f"overlap / sync: {results['overlap_over_sync']:.3f}")
    for key, value in copy_latency(args.copy_mb << 20, args.rounds).items():
        results[key] = round(value, 3)
        print(f"{args.copy_mb} MB {key}: {value:9.3f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
