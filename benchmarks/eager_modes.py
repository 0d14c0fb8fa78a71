"""One GPT training step (2 layers, d_model 128, 4 heads, sequence 64, batch 8, AdamW) in the three
eager modes on "tpu" (Strict, Fused, Debug) and in native CPU eager, measured side by side: after
warm-up, rounds of steps run each mode in turn and the median round is reported per mode. Each step
ends with `loss.item()`, as a training loop that logs its loss does. CPU eager runs in a child
process that never starts the PJRT plugin: on 2 cores the plugin's idle worker threads slow
PyTorch's OpenMP loops several-fold, which would not be a fair CPU figure.

Last line: JSON with strict_s, fused_s, debug_s, cpu_eager_s (seconds per step),
fused_speedup_vs_strict, steady_state_compiles_fused (compiles per step after warm-up),
fused_programs_per_step and fused_host_round_trips_per_step (executions and device-to-host reads
made by ops per Fused step, the user's loss.item() aside), and
the Strict and Fused figures of the tests' tiny GPT (d_model 32), where launches rather than compute
dominate a step."""

import argparse
import contextlib
import copy
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from gpt import SMALL, TINY, make, train_step

import torch_pjrt

MODES = ("strict", "fused", "debug", "cpu")


class Runner:
    """A model, its optimizer and data on one device, stepping in one mode."""

    def __init__(self, mode, model, x, y):
        self.mode = mode
        device = "cpu" if mode == "cpu" else "tpu"
        self.model = copy.deepcopy(model).to(device)
        self.x, self.y = x.to(device), y.to(device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3, weight_decay=0.1)
        self.losses = []
        self.per_step = {}  # counters per step in the last steps() call

    def steps(self, n):
        """Runs n steps; returns (seconds per step, compiles per step)."""
        ctx = contextlib.nullcontext() if self.mode == "cpu" else torch_pjrt.eager_mode(self.mode)
        with ctx:
            before = torch_pjrt.metrics.counters()
            compiles = before["compiles"]
            start = time.perf_counter()
            for _ in range(n):
                self.losses.append(train_step(self.model, self.opt, self.x, self.y).item())
            seconds = (time.perf_counter() - start) / n
            after = torch_pjrt.metrics.counters()
            compiles = after["compiles"] - compiles
            for key in ("executions", "host_round_trips"):
                self.per_step[key] = (after[key] - before[key]) / n
        return seconds, compiles / n


def measure(modes, args, config=SMALL):
    """{mode: (median seconds per step, warm-up seconds, losses, compiles per step by round,
    counters per step of the last round)}."""
    model, x, y = make(config)
    runners = {mode: Runner(mode, model, x, y) for mode in modes}
    warmup_s = {}
    for mode, r in runners.items():
        start = time.perf_counter()
        r.steps(args.warmup)
        warmup_s[mode] = time.perf_counter() - start
    times = {mode: [] for mode in modes}
    compiles = {mode: [] for mode in modes}
    for _ in range(args.rounds):
        for mode, r in runners.items():
            seconds, per_step = r.steps(args.steps)
            times[mode].append(seconds)
            compiles[mode].append(per_step)
    return {
        mode: (statistics.median(times[mode]), warmup_s[mode], r.losses, compiles[mode], r.per_step)
        for mode, r in runners.items()
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--warmup", type=int, default=3, help="steps before timing, per mode")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="steps per mode and round")
    parser.add_argument("--cpu-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cpu_child:
        print(json.dumps(measure(["cpu"], args)["cpu"]))
        return

    child = subprocess.run(
        [sys.executable, __file__, "--cpu-child"] + sys.argv[1:],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )
    results = {"cpu": tuple(json.loads(child.stdout.strip().splitlines()[-1]))}
    results.update(measure(MODES[:3], args))
    # The tests' tiny GPT (d_model 32, sequence 16, batch 8): launch-bound rather than
    # compute-bound, it shows what fusion saves per op.
    tiny = measure(["strict", "fused"], args, TINY)
    step_s = {mode: r[0] for mode, r in results.items()}
    warmup_s = {mode: r[1] for mode, r in results.items()}
    fused_compiles = results["fused"][3]

    cpu_losses = torch.tensor(results["cpu"][2])
    for mode in MODES:
        rel = ((torch.tensor(results[mode][2]) - cpu_losses).abs() / cpu_losses.abs()).max()
        print(
            f"{mode:>6}: {step_s[mode] * 1e3:8.2f} ms/step  (warm-up {warmup_s[mode]:6.1f} s, "
            f"max loss rel. diff vs CPU {rel.item():.1e})"
        )
    for mode in ("strict", "fused"):
        print(f"{mode:>6}: {tiny[mode][0] * 1e3:8.2f} ms/step on the tiny GPT")
    fused_counts = results["fused"][4]
    print(
        f" fused: {fused_counts['executions']:g} programs and "
        f"{fused_counts['host_round_trips']:g} host round trips per step"
    )
    result = {
        "strict_s": round(step_s["strict"], 5),
        "fused_s": round(step_s["fused"], 5),
        "debug_s": round(step_s["debug"], 5),
        "cpu_eager_s": round(step_s["cpu"], 5),
        "fused_speedup_vs_strict": round(step_s["strict"] / step_s["fused"], 2),
        "steady_state_compiles_fused": max(fused_compiles),
        "fused_programs_per_step": fused_counts["executions"],
        "fused_host_round_trips_per_step": fused_counts["host_round_trips"],
        "tiny_strict_s": round(tiny["strict"][0], 5),
        "tiny_fused_s": round(tiny["fused"][0], 5),
        "tiny_fused_speedup_vs_strict": round(tiny["strict"][0] / tiny["fused"][0], 2),
        "load_average": os.getloadavg()[0],
        "rounds": args.rounds,
        "steps_per_round": args.steps,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
