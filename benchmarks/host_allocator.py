"""The host allocator under a Fused training step (issue 36): the benchmark GPT's AdamW step in
Fused eager mode, in one process per allocator (glibc's malloc, and tcmalloc and jemalloc where
installed, through LD_PRELOAD), the allocators taking turns round by round. A step records
hundreds of ops, each allocating a few small objects (PyTorch's tensors and autograd nodes, the
deferred graph's nodes and values) that are all freed at once after the launch; glibc's malloc
spends much of the main thread's time sorting those frees into its bins.

Per step (medians): wall time, the main thread's CPU time (recording the forward and optimizer,
the flush; the backward records on PyTorch's autograd thread) and the process's CPU time (the
XLA CPU plugin's compute threads included). Last line: JSON {allocator: {...}, ratios vs glibc}
with the load average. Debian: `apt-get install libtcmalloc-minimal4 libjemalloc2`."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ALLOCATORS = {
    "glibc": "",
    "tcmalloc": "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
    "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
}


def child(case, steps):
    """One allocator's process: warm up, then time `steps` steps; prints JSON medians in us."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gpt

    import torch_pjrt

    model, x, y = gpt.make(getattr(gpt, case))
    model, x, y = model.to("tpu"), x.to("tpu"), y.to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    wall, thread, process = [], [], []
    with torch_pjrt.eager_mode("fused"):
        for _ in range(5):
            gpt.train_step(model, opt, x, y).item()
        for _ in range(steps):
            w, t, p = time.perf_counter(), time.thread_time(), time.process_time()
            gpt.train_step(model, opt, x, y).item()
            wall.append(time.perf_counter() - w)
            thread.append(time.thread_time() - t)
            process.append(time.process_time() - p)

    def us(values):
        return round(statistics.median(values) * 1e6, 1)

    print(json.dumps({"wall_us": us(wall), "main_thread_cpu_us": us(thread),
                      "process_cpu_us": us(process)}))  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="SMALL", help="a gpt.py configuration: SMALL, LARGE")
    parser.add_argument("--steps", type=int, default=40, help="timed steps per process")
    parser.add_argument("--rounds", type=int, default=3, help="processes per allocator")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.case, args.steps)
        return
    found = {name: path for name, path in ALLOCATORS.items() if not path or os.path.exists(path)}
    print("allocators:", ", ".join(found), flush=True)
    result = {"case": args.case, "load_average_start": os.getloadavg()[0]}
    runs = {name: [] for name in found}
    for _ in range(args.rounds):
        for name, path in found.items():
            env = dict(os.environ, LD_PRELOAD=path) if path else dict(os.environ)
            out = subprocess.run(
                [sys.executable, __file__, "--child", "--case", args.case, "--steps",
                 str(args.steps)],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"  {name:>8}: {runs[name][-1]}", flush=True)
    for name, entries in runs.items():
        result[name] = {k: statistics.median(e[k] for e in entries) for k in entries[0]}
    for name in found:
        if name != "glibc":
            result[f"{name}_vs_glibc"] = {
                k: round(result[name][k] / result["glibc"][k], 3) for k in result["glibc"]
            }
    result["load_average_end"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
