"""Soak test: long training runs on device "tpu" whose process footprint must stay flat.

Each mode trains tests/python/models.py's MLP with AdamW on a synthetic regression task:
"fused" and "strict" are the eager modes at a fixed batch shape; "compile" runs the forward and
backward through torch.compile(backend="tpu") with the batch size cycling over --shapes values.
Every --every steps it samples RSS (VmRSS), the lines of /proc/self/maps, torch.tpu.memory_allocated(),
the executables alive (eager program cache + torch.compile's program cache), the compile counters
and the step time. After a warm-up share of the samples, the second half's maximum of each figure
may exceed the first half's maximum only within a tolerance (see TOLERANCES). Prints one JSON
summary last and exits 1 when a mode is not flat or its losses are not finite and decreasing.

  nice -n 10 .venv/bin/python scripts/soak.py --steps 10000 --modes fused,strict,compile
"""

import argparse
import json
import math
import os
import sys
import tempfile
import time

# torch.compile's disk cache goes to a throwaway folder unless the caller chose one.
os.environ.setdefault("TORCH_PJRT_CACHE_DIR", tempfile.mkdtemp(prefix="soak-cache-"))

import torch  # autoloads torch_pjrt
import torch.nn.functional as F

import torch_pjrt
from torch_pjrt.compile import runner

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python")
)
from models import MLP

MiB = 2**20
# Allowed growth of the second half's maximum over the first half's. RSS: glibc's arenas and
# Python's allocator move by a few MiB without a leak; 4 MiB over 5,000 steps still catches a leak
# of ~1 KiB per step, and 2% covers a larger process. Maps: malloc serves big requests with mmap
# and gives them back, so a handful of lines come and go; a leaked executable adds 3-9 (XLA:CPU).
# Device memory and executables are exact: the same step allocates and compiles the same things.
TOLERANCES = {
    "rss_bytes": lambda base: max(4 * MiB, 0.02 * base),
    "maps": lambda base: 16,
    "device_bytes": lambda base: 0,
    "executables": lambda base: 0,
    "compiles": lambda base: 0,
}


def _rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _maps():
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def executables_alive():
    """Eager programs cached (LRU, TORCH_PJRT_PROGRAM_CACHE_SIZE) plus torch.compile's programs."""
    return torch_pjrt._C._cached_programs() + len(runner._programs)


def sample(step, step_seconds, loss):
    c = torch_pjrt.metrics.counters()
    return {
        "step": step,
        "rss_bytes": _rss_bytes(),
        "maps": _maps(),
        "device_bytes": torch.tpu.memory_allocated(),
        "executables": executables_alive(),
        "compiles": c["compiles"] + c["compile"]["graphs_compiled"],
        "evictions": c["program_evictions"],
        "step_seconds": step_seconds,
        "loss": loss,
    }


def _batch(gen, weight, n):
    x = torch.randn(n, 16, generator=gen)
    return x, x @ weight + 0.01 * torch.randn(n, 4, generator=gen)


def train(mode, steps, every, shapes=16, seed=0):
    """Trains for `steps` steps in `mode` ("fused", "strict" or "compile") and returns the samples
    taken every `every` steps (and after the last one). Data comes from the CPU each step."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(16, 4, generator=gen) / 4
    model = MLP().to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def loss_fn(x, y):
        return F.mse_loss(model(x), y)

    forward = torch.compile(loss_fn, backend="tpu") if mode == "compile" else loss_fn
    eager_mode = "fused" if mode == "compile" else mode
    samples, elapsed, window = [], 0.0, []
    with torch_pjrt.eager_mode(eager_mode):
        for step in range(1, steps + 1):
            # "compile" cycles over `shapes` batch sizes (Dynamo makes the dimension dynamic on the
            # first change; our runner compiles one program per concrete size).
            n = 32 + (step % shapes) if mode == "compile" else 32
            x, y = _batch(gen, weight, n)
            start = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = forward(x.to("tpu"), y.to("tpu"))
            loss.backward()
            opt.step()
            value = loss.item()
            elapsed = time.perf_counter() - start
            window.append(value)
            if step % every == 0 or step == steps:
                samples.append(sample(step, elapsed, sum(window) / len(window)))
                window = []
    return samples


def check(samples, warmup=0.1):
    """The flatness verdict of one mode's samples: per figure the first and second half maxima
    after the warm-up share, their growth and tolerance; losses finite and lower at the end."""
    body = samples[max(1, int(len(samples) * warmup)) :]
    if len(body) < 4:
        raise ValueError(f"too few samples after warm-up ({len(body)}): lower --every")
    first, second = body[: len(body) // 2], body[len(body) // 2 :]
    figures, ok = {}, True
    for key, tolerance in TOLERANCES.items():
        base = max(s[key] for s in first)
        growth = max(s[key] for s in second) - base
        flat = growth <= tolerance(base)
        ok &= flat
        figures[key] = {
            "first": samples[0][key],
            "last": samples[-1][key],
            "half1_max": base,
            "half2_max": base + growth,
            "growth": growth,
            "flat": flat,
        }
    losses = [s["loss"] for s in samples]
    finite = all(math.isfinite(v) for v in losses)
    decreasing = finite and losses[-1] < losses[0]
    ok &= finite and decreasing
    times = sorted(s["step_seconds"] for s in first), sorted(s["step_seconds"] for s in second)
    return {
        "ok": ok,
        "figures": figures,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "losses_finite": finite,
        "loss_decreased": decreasing,
        "step_ms_median": [1e3 * t[len(t) // 2] for t in times],
        "evictions": samples[-1]["evictions"],
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--steps", type=int, default=10000)
    p.add_argument("--modes", default="fused,strict,compile")
    p.add_argument("--every", type=int, default=0, help="sample period (default: steps / 100)")
    p.add_argument("--shapes", type=int, default=16, help="batch sizes that compile cycles over")
    p.add_argument("--warmup", type=float, default=0.1, help="share of samples ignored first")
    p.add_argument("--samples-out", help="write every sample to this JSON file")
    args = p.parse_args(argv)
    every = args.every or max(1, args.steps // 100)
    summary, all_samples = {"steps": args.steps, "every": every, "modes": {}}, {}
    for mode in args.modes.split(","):
        if mode not in ("fused", "strict", "compile"):
            p.error(f"unknown mode {mode!r}")
        start = time.perf_counter()
        samples = train(mode, args.steps, every, args.shapes)
        result = check(samples, args.warmup)
        result["wall_seconds"] = round(time.perf_counter() - start, 1)
        summary["modes"][mode] = result
        all_samples[mode] = samples
        print(f"{mode}: {'flat' if result['ok'] else 'NOT FLAT'}", file=sys.stderr)
    if args.samples_out:
        with open(args.samples_out, "w") as f:
            json.dump(all_samples, f)
    summary["ok"] = all(r["ok"] for r in summary["modes"].values())
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
